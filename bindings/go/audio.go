package zerfoo

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
)

// Audio in the prompt (issue #46): an audio projector (ultravox, qwen2a, voxtral; Info's
// Modalities has ModalityAudio) encodes 16 kHz mono PCM; DecodeWAV converts WAV files, and
// EncodeWAV writes samples as the WAV bytes a chat turn's TurnMessage.Audio takes.

// AudioSampleRate is the PCM rate EmbedAudio, EvalAudio and TurnMessage.Audio take.
const AudioSampleRate = 16000

const (
	MinAudioSamples = 160     // the shortest clip: 10 ms (ZF_AUDIO_MIN_SAMPLES)
	MaxAudioSamples = 9600000 // the longest: 10 minutes (ZF_AUDIO_MAX_SAMPLES)
)

// pcmPtr is pcm's first sample, or a valid pointer for an empty clip (the library then names
// the sample count rather than a NULL pointer).
func pcmPtr(pcm []float32) *float32 {
	if len(pcm) == 0 {
		return &make([]float32, 1)[0]
	}
	return &pcm[0]
}

// EmbedAudio encodes a clip (16 kHz mono samples, nominally in [-1, 1]) into the embeddings the
// model takes in its prompt (zf_audio_embed): one []float32 of Info().NEmbd per row, 375 rows
// per started 30 s for ultravox and voxtral, 750 for qwen2a. threads 0 uses the machine's cores
// (at most 8). An image projector, too few or too many samples, a NaN or infinite sample (its
// index named) fail with ErrInvalidArgument.
func (p *Mmproj) EmbedAudio(pcm []float32, threads int) ([][]float32, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	data := pcmPtr(pcm)
	n := uintptr(len(pcm))
	var out []float32
	var nTok int32
	err := p.use(func(ptr uintptr) error {
		// The size first (known from the length alone), then the embeddings.
		var needed uintptr
		err := call("embed audio", func() int32 { return lib.audioEmbed(ptr, data, n, int32(threads), nil, 0, &needed, &nTok) })
		if !errors.Is(err, ErrBufferTooSmall) || needed == 0 {
			return err
		}
		out = make([]float32, needed)
		return call("embed audio", func() int32 {
			return lib.audioEmbed(ptr, data, n, int32(threads), &out[0], uintptr(len(out)), &needed, &nTok)
		})
	})
	runtime.KeepAlive(pcm)
	if err != nil {
		return nil, err
	}
	return splitRows("embed audio", out, nTok)
}

// EvalAudio appends a clip (16 kHz mono samples) at the end of the session's conversation as
// libmtmd places it: the projector's begin marker (qwen2a, voxtral), the clip's embeddings, the
// end marker (zf_session_eval_audio). Generate after it continues the session (the raw-prompt
// route). The projector must be an audio projector of the session's model; errors name the
// problem, and nothing is appended then.
func (s *Session) EvalAudio(p *Mmproj, pcm []float32) error {
	data := pcmPtr(pcm)
	err := s.evalWith(p, "eval audio", func(sp, mp uintptr) int32 {
		return lib.sessionEvalAudio(sp, mp, data, uintptr(len(pcm)), nil, 0)
	})
	runtime.KeepAlive(pcm)
	return err
}

// EncodeWAV writes 16 kHz mono samples as a WAV file's bytes (32-bit IEEE float, the samples
// exactly): for TurnMessage.Audio when the clip was decoded from another container (MP3, FLAC,
// Ogg) or made in memory. DecodeWAV reads it back unchanged.
func EncodeWAV(pcm []float32) []byte {
	dataBytes := uint32(len(pcm) * 4)
	b := make([]byte, 0, 44+len(pcm)*4)
	le := binary.LittleEndian
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, 36+dataBytes)
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)                // fmt chunk size
	b = le.AppendUint16(b, 3)                 // WAVE_FORMAT_IEEE_FLOAT
	b = le.AppendUint16(b, 1)                 // mono
	b = le.AppendUint32(b, AudioSampleRate)   // sample rate
	b = le.AppendUint32(b, AudioSampleRate*4) // byte rate
	b = le.AppendUint16(b, 4)                 // block align
	b = le.AppendUint16(b, 32)                // bits per sample
	b = append(b, "data"...)
	b = le.AppendUint32(b, dataBytes)
	for _, v := range pcm {
		b = le.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
