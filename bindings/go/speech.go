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
// (whisper_full_default_params(GREEDY): English, timestamps, greedy, the temperature fallback in
// 0.2 steps with best of 5, the hardware's threads).
type TranscribeOptions struct {
	Threads        int    // 0: the hardware's (at most 8)
	Language       string // a Whisper code ("en", "de", ...), "auto" (multilingual models) or "" (en)
	Translate      bool   // translate into English (multilingual models)
	NoTimestamps   bool   // one segment per 30 s window
	Prompt         string // initial prompt: text the first window continues from
	CarryPrompt    bool   // keep Prompt in front of every window's prompt
	WordTimestamps bool   // token start/end times and Segment.Words
	NoContext      bool   // do not offer the previous window's text as the next one's prompt

	Temperature    float32 // first temperature in [0, 1]; 0: greedy or beam search
	TemperatureInc float32 // fallback step; 0: the default 0.2
	NoFallback     bool    // no temperature fallback
	BeamSize       int     // > 1: beam search (at most 8); whisper-cli uses 5
	BestOf         int     // sequences sampled above temperature 0; 0: the default 5
	Seed           uint32  // sequence j samples from std::mt19937(Seed + j): reproducible
	// nil: whisper.cpp's defaults (length penalty -1, entropy 2.4, log-probability -1, no speech 0.6).
	LengthPenalty, EntropyThold, LogprobThold, NoSpeechThold *float32
}

// SpeechToken is one decoded token of a segment.
type SpeechToken struct {
	ID         int32   // token id (SpeechModel.TokenText gives its text)
	P          float32 // the probability the decoder gave it
	PLog       float32 // its log-probability
	T0Ms, T1Ms int64   // its start and end with WordTimestamps; else 0
}

// Word is a segment's text tokens joined at a leading space (with WordTimestamps).
type Word struct {
	Text       string // with its leading space
	T0Ms, T1Ms int64
	P          float32 // the lowest probability among its tokens
}

// Segment is the text between two timestamps.
type Segment struct {
	T0Ms, T1Ms   int64 // start and end in milliseconds
	Text         string
	Tokens       []SpeechToken
	NoSpeechProb float32
	Words        []Word  // with WordTimestamps
	Temperature  float32 // the temperature the window was decoded at (above the first: a fallback)
	AvgLogprob   float32 // average log-probability of the window's tokens
}

// Transcription is the result of Transcribe.
type Transcription struct {
	Segments     []Segment
	Text         string  // the whole text
	Language     string  // the language decoded with (the detected one for "auto")
	LanguageProb float32 // the detected language's probability ("auto"); 0 when given
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
	// Appended (issue #47 decoding).
	temperature, temperatureInc float32
	beamSize, bestOf            int32
	lengthPenalty, entropyThold float32
	logprobThold, noSpeechThold float32
	seed                        uint32
	nMaxTextCtx                 int32
}

type cSpeechSegment struct {
	structSize   uint32
	reserved     uint32
	t0Ms, t1Ms   int64
	text         *byte
	textLen      uintptr
	tokens       *cSpeechToken
	nTokens      uintptr
	noSpeechProb float32
	reserved2    uint32
	// Appended (issue #47 decoding).
	tokenTimes  *cTokenTime
	words       *cWord
	nWords      uintptr
	temperature float32
	avgLogprob  float32
}

// zf_speech_token.
type cSpeechToken struct {
	id       int32
	p, plog  float32
	reserved uint32
}

// zf_speech_token_time.
type cTokenTime struct{ t0Ms, t1Ms int64 }

// zf_speech_word.
type cWord struct {
	text       *byte
	textLen    uintptr
	t0Ms, t1Ms int64
	p          float32
	reserved   uint32
}

const (
	transcribeTranslate      = 1
	transcribeNoTimestamps   = 2
	transcribeWordTimestamps = 4
	transcribeCarryPrompt    = 8
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
	s := Segment{T0Ms: c.t0Ms, T1Ms: c.t1Ms, NoSpeechProb: c.noSpeechProb, Temperature: c.temperature,
		AvgLogprob: c.avgLogprob}
	if c.text != nil && c.textLen > 0 {
		s.Text = string(unsafe.Slice(c.text, c.textLen)) // copied: valid only during the call
	}
	if c.tokens != nil && c.nTokens > 0 {
		raw := unsafe.Slice(c.tokens, c.nTokens)
		s.Tokens = make([]SpeechToken, len(raw))
		for i, t := range raw {
			s.Tokens[i] = SpeechToken{ID: t.id, P: t.p, PLog: t.plog}
		}
		if c.tokenTimes != nil {
			for i, tt := range unsafe.Slice(c.tokenTimes, c.nTokens) {
				s.Tokens[i].T0Ms, s.Tokens[i].T1Ms = tt.t0Ms, tt.t1Ms
			}
		}
	}
	if c.words != nil && c.nWords > 0 {
		for _, w := range unsafe.Slice(c.words, c.nWords) {
			s.Words = append(s.Words, Word{Text: string(unsafe.Slice(w.text, w.textLen)), T0Ms: w.t0Ms, T1Ms: w.t1Ms, P: w.p})
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

// Transcribe transcribes 16 kHz mono PCM (DecodeWAV converts WAV files) with timestamps, as
// whisper.cpp's whisper_full does (greedy or beam search, the temperature fallback).
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
	if o.WordTimestamps {
		p.flags |= transcribeWordTimestamps
	}
	if o.CarryPrompt {
		p.flags |= transcribeCarryPrompt
	}
	var prompt []byte
	if o.Prompt != "" {
		prompt = cstr(o.Prompt)
		p.initialPrompt = &prompt[0]
	}
	if o.NoContext {
		p.nMaxTextCtx = 0
	}
	p.temperature = o.Temperature
	if o.TemperatureInc != 0 {
		p.temperatureInc = o.TemperatureInc
	}
	if o.NoFallback {
		p.temperatureInc = 0
	}
	p.beamSize = int32(o.BeamSize)
	if o.BestOf != 0 {
		p.bestOf = int32(o.BestOf)
	}
	p.seed = o.Seed
	for _, f := range []struct {
		v   *float32
		dst *float32
	}{{o.LengthPenalty, &p.lengthPenalty}, {o.EntropyThold, &p.entropyThold}, {o.LogprobThold, &p.logprobThold},
		{o.NoSpeechThold, &p.noSpeechThold}} {
		if f.v != nil {
			*f.dst = *f.v
		}
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
	runtime.KeepAlive(prompt)
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
	if err = call("transcription language probability", func() int32 {
		return lib.transcriptionLangP(out, &t.LanguageProb)
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
