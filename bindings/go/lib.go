package zerfoo

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// The C header version this binding was written for (ZF_VERSION_MAJOR/MINOR in zerfoo.h).
const (
	HeaderMajor = 0
	HeaderMinor = 7
)

// lib holds the process-wide library handle and its functions. It is filled once.
var lib struct {
	once   sync.Once
	err    error
	handle uintptr
	path   string // where the library was found

	version            func() uint32
	versionString      func() string
	lastError          func() string
	setLogLevel        func(level int32) int32
	backendAvail       func(device int32) int32
	modelInit          func(p *cModelParams, size uintptr) int32
	modelLoad          func(path *byte, p *cModelParams, out *uintptr) int32
	modelFree          func(m uintptr)
	modelInfo          func(m uintptr, info *cModelSummary) int32
	modelCacheInfo     func(m uintptr, info *cCacheInfo) int32
	modelMeta          func(m uintptr, key *byte, buf *byte, cap uintptr, needed *uintptr) int32
	tokenize           func(m uintptr, text *byte, n uintptr, flags uint32, toks *int32, cap uintptr, nOut *uintptr) int32
	detokenize         func(m uintptr, toks *int32, n uintptr, flags uint32, buf *byte, cap uintptr, needed *uintptr) int32
	applyTemplate      func(m uintptr, msgs *cChatMessage, n uintptr, flags uint32, buf *byte, cap uintptr, needed *uintptr) int32
	applyTemplate2     func(m uintptr, msgs *cChatMessageV2, n uintptr, p *cChatParams, buf *byte, cap uintptr, needed *uintptr) int32
	chatParse          func(m uintptr, text *byte, n uintptr, p *cChatParams, buf *byte, cap uintptr, needed *uintptr) int32
	chatToolGrammar    func(m uintptr, p *cChatParams, buf *byte, cap uintptr, needed *uintptr) int32
	sessionInit        func(p *cSessionParams, size uintptr) int32
	sessionCreate      func(m uintptr, p *cSessionParams, out *uintptr) int32
	sessionFree        func(s uintptr)
	sessionReset       func(s uintptr) int32
	sessionCancel      func(s uintptr) int32
	sessionNPast       func(s uintptr, n *int32) int32
	sessionSetDraft    func(s uintptr, draft uintptr) int32
	generateInit       func(p *cGenParams, size uintptr) int32
	generate           func(s uintptr, prompt *byte, n uintptr, p *cGenParams, cb uintptr, userData uintptr, out *cGenResult) int32
	generateBegin      func(s uintptr, prompt *byte, n uintptr, p *cGenParams, out *uintptr) int32
	generationNext     func(g uintptr, buf *byte, cap uintptr, n *uintptr, token *int32, done *int32) int32
	generationResult   func(g uintptr, out *cGenResult) int32
	generationFree     func(g uintptr)
	sessionLogprobs    func(s uintptr, out *TokenLogprob, cap uintptr, n *uintptr, stride *uintptr) int32
	constraintCheck    func(m uintptr, kind int32, constraint *byte) int32
	embedInit          func(p *cEmbedParams, size uintptr) int32
	embedDimension     func(m uintptr, p *cEmbedParams, dim *uintptr) int32
	embed              func(m uintptr, p *cEmbedParams, texts **byte, lens *uintptr, n uintptr, out *float32, cap uintptr, needed *uintptr) int32
	embedTokens        func(m uintptr, p *cEmbedParams, tokens **int32, nTokens *uintptr, n uintptr, out *float32, cap uintptr, needed *uintptr) int32
	rerank             func(m uintptr, p *cEmbedParams, query *byte, queryLen uintptr, docs **byte, docLens *uintptr, n uintptr, scores *float32) int32
	turnInit           func(p *cTurnParams, size uintptr) int32
	turnBegin          func(s uintptr, p *cTurnParams, out *uintptr) int32
	turnNext           func(t uintptr, ev *cTurnEvent) int32
	turnMessage        func(t uintptr, buf *byte, cap uintptr, needed *uintptr) int32
	turnFree           func(t uintptr)
	turnRun            func(s uintptr, p *cTurnParams, cb uintptr, userData uintptr, out *uintptr) int32
	turnPrompt         func(m uintptr, p *cTurnParams, buf *byte, cap uintptr, needed *uintptr) int32
	loraLoad           func(m uintptr, path *byte, out *uintptr) int32
	loraFree           func(a uintptr)
	loraInfo           func(a uintptr, info *cLoraSummary) int32
	sessionSetLoras    func(s uintptr, adapters *uintptr, scales *float32, n uintptr) int32
	speechLoad         func(path *byte, flags uint32, out *uintptr) int32
	speechFree         func(m uintptr)
	speechInfo         func(m uintptr, info *cSpeechSummary) int32
	transcribeInit     func(p *cTranscribeParams, size uintptr) int32
	transcribe         func(m uintptr, pcm *float32, n uintptr, p *cTranscribeParams, cb uintptr, userData uintptr, out *uintptr) int32
	transcriptionN     func(r uintptr) uintptr
	transcriptionSeg   func(r uintptr, i uintptr, out *cSpeechSegment) int32
	transcriptionTxt   func(r uintptr, buf *byte, cap uintptr, needed *uintptr) int32
	transcriptionLng   func(r uintptr, buf *byte, cap uintptr, needed *uintptr) int32
	transcriptionFre   func(r uintptr)
	transcriptionLangP func(r uintptr, prob *float32) int32
	speechTokenText    func(m uintptr, id int32, buf *byte, cap uintptr, needed *uintptr) int32
	wavDecode          func(data *byte, size uintptr, pcm *float32, cap uintptr, n *uintptr) int32
	mmprojLoad         func(m uintptr, path *byte, flags uint32, out *uintptr) int32
	mmprojFree         func(p uintptr)
	mmprojInfo         func(p uintptr, info *cMmprojSummary) int32
	imageEmbed         func(p uintptr, image *cImage, nThreads int32, out *float32, cap uintptr, needed *uintptr, nTokens *int32) int32
	sessionEvalImage   func(s uintptr, p uintptr, image *cImage, logits *float32, cap uintptr) int32
	sessionEvalEmbd    func(s uintptr, embd *float32, nTokens, width uintptr, flags uint32, logits *float32, cap uintptr) int32
	audioEmbed         func(p uintptr, pcm *float32, n uintptr, nThreads int32, out *float32, cap uintptr, needed *uintptr, nTokens *int32) int32
	sessionEvalAudio   func(s uintptr, p uintptr, pcm *float32, n uintptr, logits *float32, cap uintptr) int32
}

// Load loads libzerfoo from path (if non-empty) or by the default search: $ZERFOO_LIBRARY,
// then the system loader ("libzerfoo.so.0", then "libzerfoo.so"). Only the first call does
// anything; later calls (and every other function of this package, which calls Load("")
// implicitly) return the first call's result. Call it before anything else to pick a path.
func Load(path string) error {
	lib.once.Do(func() { lib.err = load(path) })
	return lib.err
}

// LibraryPath reports where the library was loaded from ("" before a successful Load).
func LibraryPath() string {
	if Load("") != nil {
		return ""
	}
	return lib.path
}

// Version returns the loaded library's version string, e.g. "0.6.0".
func Version() (string, error) {
	if err := Load(""); err != nil {
		return "", err
	}
	return lib.versionString(), nil
}

type candidate struct{ path, source string }

func candidates(explicit string) []candidate {
	if explicit != "" {
		return []candidate{{explicit, "zerfoo.Load"}}
	}
	var c []candidate
	if env := os.Getenv("ZERFOO_LIBRARY"); env != "" {
		c = append(c, candidate{env, "$ZERFOO_LIBRARY"})
	}
	names := []string{"libzerfoo.so.0", "libzerfoo.so"}
	if runtime.GOOS == "darwin" {
		names = []string{"libzerfoo.0.dylib", "libzerfoo.dylib"}
	}
	for _, n := range names {
		c = append(c, candidate{n, "system loader"})
	}
	return c
}

func load(explicit string) error {
	var tried []string
	for _, c := range candidates(explicit) {
		p := c.path
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("  %s (%s): %v", p, c.source, err))
			continue
		}
		if err := bind(h); err != nil {
			return fmt.Errorf("zerfoo: %s: %w", p, err)
		}
		lib.handle, lib.path = h, p
		return nil
	}
	return fmt.Errorf("zerfoo: cannot load libzerfoo (set ZERFOO_LIBRARY or call zerfoo.Load); tried:\n%s",
		strings.Join(tried, "\n"))
}

// bind checks the version first (so an old library reports a version error rather than a
// missing symbol), then registers every function.
func bind(h uintptr) error {
	if err := sym(h, &lib.version, "zf_version"); err != nil {
		return err
	}
	v := lib.version()
	major, minor := v/1000000, v/1000%1000
	if major != HeaderMajor || minor < HeaderMinor {
		return fmt.Errorf("library version %d.%d.%d is incompatible: this binding needs %d.x with x >= %d",
			major, minor, v%1000, HeaderMajor, HeaderMinor)
	}
	syms := []struct {
		fn   any
		name string
	}{
		{&lib.versionString, "zf_version_string"},
		{&lib.lastError, "zf_last_error"},
		{&lib.setLogLevel, "zf_set_log_level"},
		{&lib.backendAvail, "zf_backend_available"},
		{&lib.modelInit, "zf_model_params_init"},
		{&lib.modelLoad, "zf_model_load"},
		{&lib.modelFree, "zf_model_free"},
		{&lib.modelInfo, "zf_model_info"},
		{&lib.modelCacheInfo, "zf_model_cache_info"},
		{&lib.modelMeta, "zf_model_meta"},
		{&lib.tokenize, "zf_tokenize"},
		{&lib.detokenize, "zf_detokenize"},
		{&lib.applyTemplate, "zf_chat_apply_template"},
		{&lib.applyTemplate2, "zf_chat_apply_template_v2"},
		{&lib.chatParse, "zf_chat_parse"},
		{&lib.chatToolGrammar, "zf_chat_tool_grammar"},
		{&lib.sessionInit, "zf_session_params_init"},
		{&lib.sessionCreate, "zf_session_create"},
		{&lib.sessionFree, "zf_session_free"},
		{&lib.sessionReset, "zf_session_reset"},
		{&lib.sessionCancel, "zf_session_cancel"},
		{&lib.sessionNPast, "zf_session_n_past"},
		{&lib.sessionSetDraft, "zf_session_set_draft_model"},
		{&lib.generateInit, "zf_generate_params_init"},
		{&lib.generate, "zf_generate"},
		{&lib.generateBegin, "zf_generate_begin"},
		{&lib.generationNext, "zf_generation_next"},
		{&lib.generationResult, "zf_generation_result"},
		{&lib.generationFree, "zf_generation_free"},
		{&lib.sessionLogprobs, "zf_session_logprobs"},
		{&lib.constraintCheck, "zf_constraint_check"},
		{&lib.embedInit, "zf_embed_params_init"},
		{&lib.embedDimension, "zf_embed_dimension"},
		{&lib.embed, "zf_embed"},
		{&lib.embedTokens, "zf_embed_tokens"},
		{&lib.rerank, "zf_rerank"},
		{&lib.turnInit, "zf_turn_params_init"},
		{&lib.turnBegin, "zf_chat_turn_begin"},
		{&lib.turnNext, "zf_chat_turn_next"},
		{&lib.turnMessage, "zf_chat_turn_message"},
		{&lib.turnFree, "zf_chat_turn_free"},
		{&lib.turnRun, "zf_chat_turn"},
		{&lib.turnPrompt, "zf_chat_turn_prompt"},
		{&lib.loraLoad, "zf_lora_load"},
		{&lib.loraFree, "zf_lora_free"},
		{&lib.loraInfo, "zf_lora_info"},
		{&lib.sessionSetLoras, "zf_session_set_loras"},
		{&lib.speechLoad, "zf_speech_load"},
		{&lib.speechFree, "zf_speech_free"},
		{&lib.speechInfo, "zf_speech_info"},
		{&lib.transcribeInit, "zf_transcribe_params_init"},
		{&lib.transcribe, "zf_transcribe"},
		{&lib.transcriptionN, "zf_transcription_n_segments"},
		{&lib.transcriptionSeg, "zf_transcription_segment"},
		{&lib.transcriptionTxt, "zf_transcription_text"},
		{&lib.transcriptionLng, "zf_transcription_language"},
		{&lib.transcriptionFre, "zf_transcription_free"},
		{&lib.transcriptionLangP, "zf_transcription_language_prob"},
		{&lib.speechTokenText, "zf_speech_token_text"},
		{&lib.wavDecode, "zf_wav_decode"},
		{&lib.mmprojLoad, "zf_mmproj_load"},
		{&lib.mmprojFree, "zf_mmproj_free"},
		{&lib.mmprojInfo, "zf_mmproj_info"},
		{&lib.imageEmbed, "zf_image_embed"},
		{&lib.sessionEvalImage, "zf_session_eval_image"},
		{&lib.sessionEvalEmbd, "zf_session_eval_embeddings"},
		{&lib.audioEmbed, "zf_audio_embed"},
		{&lib.sessionEvalAudio, "zf_session_eval_audio"},
	}
	for _, s := range syms {
		if err := sym(h, s.fn, s.name); err != nil {
			return err
		}
	}
	return nil
}

func sym(h uintptr, fn any, name string) error {
	p, err := purego.Dlsym(h, name)
	if err != nil {
		return fmt.Errorf("missing symbol %s: %w", name, err)
	}
	if p == 0 {
		return errors.New("missing symbol " + name)
	}
	purego.RegisterFunc(fn, p)
	return nil
}

// call runs f on a locked OS thread and, if it fails, reads zf_last_error on that same thread
// (the C library keeps the last error per thread).
func call(op string, f func() int32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f()
	if st == 0 {
		return nil
	}
	return newError(op, st, lib.lastError())
}

// cstr returns s as a NUL-terminated byte slice (pass &b[0] to C; len(s) where a length is taken).
func cstr(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// fetchString runs a (buf, cap, needed) C call, growing the buffer once on ZF_ERR_BUFFER_TOO_SMALL.
func fetchString(op string, f func(buf *byte, cap uintptr, needed *uintptr) int32) (string, error) {
	buf := make([]byte, 256)
	for {
		var needed uintptr
		err := call(op, func() int32 { return f(&buf[0], uintptr(len(buf)), &needed) })
		runtime.KeepAlive(buf)
		if err == nil {
			if i := indexNUL(buf); i >= 0 {
				return string(buf[:i]), nil
			}
			return string(buf), nil
		}
		if !errors.Is(err, ErrBufferTooSmall) || needed <= uintptr(len(buf)) {
			return "", err
		}
		buf = make([]byte, needed)
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// LogLevel selects which library messages reach stderr.
type LogLevel int32

const (
	LogDebug LogLevel = 0
	LogInfo  LogLevel = 1
	LogWarn  LogLevel = 2
	LogError LogLevel = 3
	LogNone  LogLevel = 4
)

// SetLogLevel sets the library's process-wide log threshold (default LogWarn).
func SetLogLevel(level LogLevel) error {
	if err := Load(""); err != nil {
		return err
	}
	return call("set log level", func() int32 { return lib.setLogLevel(int32(level)) })
}

// BackendAvailable reports nil if the device can run on this host, else why not.
func BackendAvailable(d Device) error {
	if err := Load(""); err != nil {
		return err
	}
	return call("backend available", func() int32 { return lib.backendAvail(int32(d)) })
}
