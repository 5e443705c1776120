package zerfoo

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// SpeechModel is a Whisper model loaded from a whisper.cpp ggml .bin file (zf_speech_load).
// It is immutable: any number of goroutines may transcribe with it at once. Close releases it
// (idempotent; a cleanup does it if forgotten).
type SpeechModel struct {
	h       *speechHandle
	cleanup runtime.Cleanup
}

type speechHandle struct {
	mu     sync.RWMutex // R: a call is using ptr; W: Close
	ptr    uintptr
	closed bool
}

func (h *speechHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	lib.speechFree(h.ptr)
	h.ptr = 0
}

// SpeechInfo describes a speech model (zf_speech_summary).
type SpeechInfo struct {
	NVocab       int  // vocabulary size
	NMels        int  // log-mel bins (80, or 128 for large-v3)
	NAudioLayer  int  // encoder blocks
	NTextLayer   int  // decoder blocks
	NAudioState  int  // encoder width
	Multilingual bool // language detection and translation; false for .en models
}

// TranscribeOptions are the options of Transcribe; the zero value is whisper.cpp's default
// (English, timestamps, the hardware's threads).
type TranscribeOptions struct {
	Threads      int    // 0: the hardware's (at most 8)
	Language     string // a Whisper code ("en", "de", ...), "auto" (multilingual models) or "" (en)
	Translate    bool   // translate into English (multilingual models)
	NoTimestamps bool   // one segment per 30 s window
}

// SpeechToken is one decoded token of a segment.
type SpeechToken struct {
	ID   int32   // token id (SpeechModel.TokenText gives its text)
	P    float32 // the probability the decoder gave it
	PLog float32 // its log-probability
}

// Segment is the text between two timestamps.
type Segment struct {
	T0Ms, T1Ms   int64 // start and end in milliseconds
	Text         string
	Tokens       []SpeechToken
	NoSpeechProb float32
}

// Transcription is the result of Transcribe.
type Transcription struct {
	Segments []Segment
	Text     string // the whole text
	Language string // the language decoded with (the detected one for "auto")
}

type cSpeechSummary struct {
	structSize   uint32
	nVocab       int32
	nMels        int32
	nAudioLayer  int32
	nTextLayer   int32
	nAudioState  int32
	multilingual int32
	reserved     uint32
}

type cTranscribeParams struct {
	structSize    uint32
	nThreads      int32
	language      *byte
	initialPrompt *byte
	flags         uint32
	reserved      uint32
}

type cSpeechSegment struct {
	structSize   uint32
	reserved     uint32
	t0Ms, t1Ms   int64
	text         *byte
	textLen      uintptr
	tokens       *SpeechToken // zf_speech_token: id, p, plog, reserved (16 bytes)
	nTokens      uintptr
	noSpeechProb float32
	reserved2    uint32
}

// The C layout of zf_speech_token: SpeechToken plus 4 bytes of padding.
type cSpeechToken struct {
	SpeechToken
	reserved uint32
}

const (
	transcribeTranslate    = 1
	transcribeNoTimestamps = 2
)

// OpenSpeech loads a whisper.cpp ggml .bin model (loading libzerfoo first if needed). A GGUF or
// malformed file fails with ErrFormat and a message naming the problem.
func OpenSpeech(path string) (*SpeechModel, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	cpath := cstr(path)
	var ptr uintptr
	err := call("load speech model", func() int32 { return lib.speechLoad(&cpath[0], 0, &ptr) })
	runtime.KeepAlive(cpath)
	if err != nil {
		return nil, err
	}
	h := &speechHandle{ptr: ptr}
	m := &SpeechModel{h: h}
	m.cleanup = runtime.AddCleanup(m, (*speechHandle).close, h)
	return m, nil
}

// Close releases the model; idempotent.
func (m *SpeechModel) Close() error {
	if m == nil || m.h == nil {
		return nil
	}
	m.cleanup.Stop()
	m.h.close()
	return nil
}

func (m *SpeechModel) use(f func(ptr uintptr) error) error {
	if m == nil || m.h == nil {
		return ErrClosed
	}
	m.h.mu.RLock()
	defer m.h.mu.RUnlock()
	if m.h.closed {
		return ErrClosed
	}
	return f(m.h.ptr)
}

// Info describes the model.
func (m *SpeechModel) Info() (SpeechInfo, error) {
	var c cSpeechSummary
	c.structSize = uint32(unsafe.Sizeof(c))
	err := m.use(func(p uintptr) error {
		return call("speech model info", func() int32 { return lib.speechInfo(p, &c) })
	})
	return SpeechInfo{int(c.nVocab), int(c.nMels), int(c.nAudioLayer), int(c.nTextLayer), int(c.nAudioState),
		c.multilingual != 0}, err
}

// TokenText is the text of a token ("" for special and timestamp tokens).
func (m *SpeechModel) TokenText(id int32) (string, error) {
	var s string
	err := m.use(func(p uintptr) error {
		var e error
		s, e = fetchString("speech token text", func(buf *byte, c uintptr, needed *uintptr) int32 {
			return lib.speechTokenText(p, id, buf, c, needed)
		})
		return e
	})
	return s, err
}

// Segment callbacks: one purego trampoline for the process; user_data is an integer handle.
type segmentSink struct {
	fn    func(Segment) bool // false stops decoding
	panic any
}

var (
	segmentCB    uintptr
	segmentCBOne sync.Once
)

func segmentTrampoline() uintptr {
	segmentCBOne.Do(func() { segmentCB = purego.NewCallback(onSegment) })
	return segmentCB
}

func segmentFrom(c *cSpeechSegment) Segment {
	s := Segment{T0Ms: c.t0Ms, T1Ms: c.t1Ms, NoSpeechProb: c.noSpeechProb}
	if c.text != nil && c.textLen > 0 {
		s.Text = string(unsafe.Slice(c.text, c.textLen)) // copied: valid only during the call
	}
	if c.tokens != nil && c.nTokens > 0 {
		raw := unsafe.Slice((*cSpeechToken)(unsafe.Pointer(c.tokens)), c.nTokens)
		s.Tokens = make([]SpeechToken, len(raw))
		for i, t := range raw {
			s.Tokens[i] = t.SpeechToken
		}
	}
	return s
}

// onSegment is the zf_segment_cb: int32_t (*)(void* user_data, const zf_speech_segment* segment).
func onSegment(userData uintptr, seg *cSpeechSegment) (stop int32) {
	v, ok := sinks.Load(userData)
	if !ok {
		return 1
	}
	s := v.(*segmentSink)
	defer func() {
		if r := recover(); r != nil { // never unwind through C: stop and re-raise in Go
			s.panic = r
			stop = 1
		}
	}()
	if !s.fn(segmentFrom(seg)) {
		return 1
	}
	return 0
}

// Transcribe transcribes 16 kHz mono PCM (DecodeWAV converts WAV files) greedily with
// timestamps, as whisper.cpp does.
func (m *SpeechModel) Transcribe(pcm []float32, o TranscribeOptions) (*Transcription, error) {
	return m.TranscribeFunc(pcm, o, nil)
}

// TranscribeFunc is Transcribe with fn called for each segment as soon as it is decoded (on the
// calling goroutine); fn returning false stops early (the result then holds the segments so far).
func (m *SpeechModel) TranscribeFunc(pcm []float32, o TranscribeOptions, fn func(Segment) bool) (*Transcription, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	var p cTranscribeParams
	lib.transcribeInit(&p, unsafe.Sizeof(p))
	p.nThreads = int32(o.Threads)
	var lang []byte
	if o.Language != "" {
		lang = cstr(o.Language)
		p.language = &lang[0]
	}
	if o.Translate {
		p.flags |= transcribeTranslate
	}
	if o.NoTimestamps {
		p.flags |= transcribeNoTimestamps
	}
	var pcmPtr *float32
	if len(pcm) > 0 {
		pcmPtr = &pcm[0]
	} else {
		pcmPtr = new(float32) // a valid pointer; the library refuses n = 0 with its own message
	}
	var cb, ud uintptr
	var sink *segmentSink
	if fn != nil {
		sink = &segmentSink{fn: fn}
		ud = nextSink.Add(1)
		sinks.Store(ud, sink)
		defer sinks.Delete(ud)
		cb = segmentTrampoline()
	}
	var out uintptr
	err := m.use(func(mp uintptr) error {
		return call("transcribe", func() int32 {
			return lib.transcribe(mp, pcmPtr, uintptr(len(pcm)), &p, cb, ud, &out)
		})
	})
	runtime.KeepAlive(lang)
	runtime.KeepAlive(pcm)
	if sink != nil && sink.panic != nil {
		if out != 0 {
			lib.transcriptionFre(out)
		}
		panic(sink.panic)
	}
	if err != nil {
		return nil, err
	}
	if out == 0 {
		return nil, errors.New("zerfoo: zf_transcribe returned no result")
	}
	defer lib.transcriptionFre(out)
	t := &Transcription{}
	n := lib.transcriptionN(out)
	for i := uintptr(0); i < n; i++ {
		var c cSpeechSegment
		c.structSize = uint32(unsafe.Sizeof(c))
		if err := call("transcription segment", func() int32 { return lib.transcriptionSeg(out, i, &c) }); err != nil {
			return nil, err
		}
		t.Segments = append(t.Segments, segmentFrom(&c))
	}
	if t.Text, err = fetchString("transcription text", func(buf *byte, c uintptr, needed *uintptr) int32 {
		return lib.transcriptionTxt(out, buf, c, needed)
	}); err != nil {
		return nil, err
	}
	if t.Language, err = fetchString("transcription language", func(buf *byte, c uintptr, needed *uintptr) int32 {
		return lib.transcriptionLng(out, buf, c, needed)
	}); err != nil {
		return nil, err
	}
	return t, nil
}

// DecodeWAV decodes a WAV file's bytes into 16 kHz mono PCM (integer 8/16/24/32-bit or float
// 32/64-bit, any channels and rate); bad bytes fail with ErrInvalidArgument naming the problem.
func DecodeWAV(data []byte) ([]float32, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		data = []byte{0}[:0:1] // a valid pointer for an empty input
	}
	base := &data[:1][0]
	var n uintptr
	err := call("decode WAV", func() int32 { return lib.wavDecode(base, uintptr(len(data)), nil, 0, &n) })
	if err != nil && !errors.Is(err, ErrBufferTooSmall) {
		return nil, err
	}
	pcm := make([]float32, n)
	if n > 0 {
		err = call("decode WAV", func() int32 { return lib.wavDecode(base, uintptr(len(data)), &pcm[0], n, &n) })
		if err != nil {
			return nil, err
		}
	}
	runtime.KeepAlive(data)
	return pcm[:n], nil
}
