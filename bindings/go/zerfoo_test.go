package zerfoo

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// Environment: ZERFOO_LIBRARY (path to libzerfoo.so.0) and optionally ZERFOO_TEST_MODEL
// (default: the SmolLM2-135M file in ~/.cache/zerfoo/models).

const prompt = "The capital of France is"

func needLib(t *testing.T) {
	t.Helper()
	p := os.Getenv("ZERFOO_LIBRARY")
	if p == "" {
		t.Skip("ZERFOO_LIBRARY is not set: skipping tests that need libzerfoo")
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("ZERFOO_LIBRARY=%s: %v", p, err)
	}
	if err := Load(p); err != nil {
		t.Fatal(err)
	}
}

func modelPath(t *testing.T) string {
	t.Helper()
	needLib(t)
	p := os.Getenv("ZERFOO_TEST_MODEL")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache/zerfoo/models/smollm2-135m-instruct-q4_1.gguf")
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("test model missing (set ZERFOO_TEST_MODEL): %v", err)
	}
	return p
}

var shared struct {
	once sync.Once
	m    *Model
	err  error
}

// sharedModel is opened once for the tests that only read from it.
func sharedModel(t *testing.T) *Model {
	t.Helper()
	p := modelPath(t)
	shared.once.Do(func() { shared.m, shared.err = Open(p, WithDevice(DeviceCPU)) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.m
}

func newSession(t *testing.T, m *Model) *Session {
	t.Helper()
	s, err := m.NewSession(WithContextSize(256), WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var greedy = []GenOption{WithTemperature(0), WithMaxTokens(16)}

func TestLayout(t *testing.T) {
	// Values from offsetof/sizeof in C (x86-64 / aarch64 LP64).
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof zf_model_params", unsafe.Sizeof(cModelParams{}), 56},
		{"offsetof progress", unsafe.Offsetof(cModelParams{}.progress), 24},
		{"offsetof max_batch", unsafe.Offsetof(cModelParams{}.maxBatch), 40},
		{"offsetof prefix_cache_mib", unsafe.Offsetof(cModelParams{}.prefixCacheMiB), 48},
		{"offsetof reserved2", unsafe.Offsetof(cModelParams{}.reserved2), 52},
		{"sizeof zf_cache_info", unsafe.Sizeof(cCacheInfo{}), 64},
		{"offsetof block_tokens", unsafe.Offsetof(cCacheInfo{}.blockTokens), 4},
		{"offsetof capacity_bytes", unsafe.Offsetof(cCacheInfo{}.capacityBytes), 8},
		{"offsetof hit_tokens", unsafe.Offsetof(cCacheInfo{}.hitTokens), 32},
		{"offsetof evicted_blocks", unsafe.Offsetof(cCacheInfo{}.evictedBlocks), 48},
		{"offsetof mapped_blocks", unsafe.Offsetof(cCacheInfo{}.mappedBlocks), 56},
		{"sizeof zf_model_summary", unsafe.Sizeof(cModelSummary{}), 112},
		{"offsetof token_fim_pre", unsafe.Offsetof(cModelSummary{}.tokenFIMPre), 88},
		{"offsetof token_fim_sep", unsafe.Offsetof(cModelSummary{}.tokenFIMSep), 108},
		{"offsetof architecture", unsafe.Offsetof(cModelSummary{}.architecture), 8},
		{"offsetof n_params", unsafe.Offsetof(cModelSummary{}.nParams), 32},
		{"offsetof n_ctx_train", unsafe.Offsetof(cModelSummary{}.nCtxTrain), 48},
		{"offsetof n_tensors", unsafe.Offsetof(cModelSummary{}.nTensors), 84},
		{"sizeof zf_chat_message", unsafe.Sizeof(cChatMessage{}), 16},
		{"sizeof zf_chat_message_v2", unsafe.Sizeof(cChatMessageV2{}), 64},
		{"offsetof extra_json", unsafe.Offsetof(cChatMessageV2{}.extraJSON), 56},
		{"sizeof zf_chat_params", unsafe.Sizeof(cChatParams{}), 56},
		{"offsetof time_unix", unsafe.Offsetof(cChatParams{}.timeUnix), 48},
		{"sizeof zf_session_params", unsafe.Sizeof(cSessionParams{}), 32},
		{"offsetof kv_type_v", unsafe.Offsetof(cSessionParams{}.kvTypeV), 24},
		{"offsetof flags", unsafe.Offsetof(cSessionParams{}.flags), 16},
		{"offsetof reserved0", unsafe.Offsetof(cSessionParams{}.reserved0), 20},
		{"offsetof n_logprobs", unsafe.Offsetof(cGenParams{}.nLogprobs), 64},
		{"sizeof zf_generate_params", unsafe.Sizeof(cGenParams{}), 104},
		{"offsetof constraint_trigger", unsafe.Offsetof(cGenParams{}.constraintTrigger), 88},
		{"offsetof draft_max", unsafe.Offsetof(cGenParams{}.draftMax), 96},
		{"offsetof draft_min", unsafe.Offsetof(cGenParams{}.draftMin), 100},
		{"offsetof constraint", unsafe.Offsetof(cGenParams{}.constraint), 72},
		{"offsetof constraint_kind", unsafe.Offsetof(cGenParams{}.constraintKind), 80},
		{"sizeof zf_token_logprob", unsafe.Sizeof(TokenLogprob{}), 8},
		{"offsetof logprob", unsafe.Offsetof(TokenLogprob{}.Logprob), 4},
		{"offsetof seed", unsafe.Offsetof(cGenParams{}.seed), 40},
		{"offsetof stop", unsafe.Offsetof(cGenParams{}.stop), 48},
		{"offsetof n_stop", unsafe.Offsetof(cGenParams{}.nStop), 56},
		{"sizeof zf_generate_result", unsafe.Sizeof(cGenResult{}), 40},
		{"offsetof n_drafted", unsafe.Offsetof(cGenResult{}.nDrafted), 32},
		{"offsetof n_accepted", unsafe.Offsetof(cGenResult{}.nAccepted), 36},
		{"sizeof zf_embed_params", unsafe.Sizeof(cEmbedParams{}), 24},
		{"offsetof pooling", unsafe.Offsetof(cEmbedParams{}.pooling), 8},
		{"offsetof dimensions", unsafe.Offsetof(cEmbedParams{}.dimensions), 12},
		{"offsetof reserved", unsafe.Offsetof(cEmbedParams{}.reserved), 20},
		{"offsetof prompt_ms", unsafe.Offsetof(cGenResult{}.promptMs), 16},
		{"sizeof zf_turn_params", unsafe.Sizeof(cTurnParams{}), 56},
		{"offsetof mmproj (turn)", unsafe.Offsetof(cTurnParams{}.mmproj), 48},
		{"offsetof request_json", unsafe.Offsetof(cTurnParams{}.requestJSON), 8},
		{"offsetof generate", unsafe.Offsetof(cTurnParams{}.generate), 32},
		{"offsetof time_unix (turn)", unsafe.Offsetof(cTurnParams{}.timeUnix), 40},
		{"sizeof zf_turn_event", unsafe.Sizeof(cTurnEvent{}), 112},
		{"offsetof text_len", unsafe.Offsetof(cTurnEvent{}.textLen), 16},
		{"offsetof tool_index", unsafe.Offsetof(cTurnEvent{}.toolIndex), 24},
		{"offsetof tool_id", unsafe.Offsetof(cTurnEvent{}.toolID), 32},
		{"offsetof logprobs", unsafe.Offsetof(cTurnEvent{}.logprobs), 48},
		{"offsetof logprob_stride", unsafe.Offsetof(cTurnEvent{}.logprobStride), 64},
		{"offsetof stop_reason (turn)", unsafe.Offsetof(cTurnEvent{}.stopReason), 72},
		{"offsetof n_cached", unsafe.Offsetof(cTurnEvent{}.nCached), 80},
		{"offsetof n_accepted (turn)", unsafe.Offsetof(cTurnEvent{}.nAccepted), 92},
		{"offsetof prompt_ms (turn)", unsafe.Offsetof(cTurnEvent{}.promptMs), 96},
		{"offsetof decode_ms (turn)", unsafe.Offsetof(cTurnEvent{}.decodeMs), 104},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestErrorIs(t *testing.T) {
	err := error(&Error{Status: 2, Op: "open", Message: "no such file"})
	if !errors.Is(err, ErrIO) || errors.Is(err, ErrFormat) {
		t.Fatalf("errors.Is mismatch for %v", err)
	}
	c := cancelled(context.Canceled)
	if !errors.Is(c, ErrCancelled) || !errors.Is(c, context.Canceled) {
		t.Fatalf("cancelled error %v does not match both", c)
	}
}

func TestLoadErrorNamesPath(t *testing.T) {
	err := load("/nonexistent/libzerfoo.so.0")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libzerfoo.so.0") {
		t.Fatalf("want an error naming the path, got %v", err)
	}
}

func TestVersion(t *testing.T) {
	needLib(t)
	v, err := Version()
	if err != nil || !strings.HasPrefix(v, "0.") {
		t.Fatalf("Version() = %q, %v", v, err)
	}
}

func TestOpenBadPath(t *testing.T) {
	needLib(t)
	p := filepath.Join(t.TempDir(), "missing.gguf")
	_, err := Open(p)
	if !errors.Is(err, ErrIO) {
		t.Fatalf("want ErrIO, got %v", err)
	}
	if !strings.Contains(err.Error(), p) {
		t.Fatalf("error does not name the path: %v", err)
	}
}

func TestOpenJunk(t *testing.T) {
	needLib(t)
	p := filepath.Join(t.TempDir(), "junk.gguf")
	if err := os.WriteFile(p, []byte(strings.Repeat("not a gguf file ", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("want ErrFormat, got %v", err)
	}
	var ze *Error
	if !errors.As(err, &ze) || ze.Message == "" {
		t.Fatalf("want an *Error with the library's message, got %#v", err)
	}
}

func TestInfoTokenizeTemplate(t *testing.T) {
	m := sharedModel(t)
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Architecture == "" || info.NVocab <= 0 || info.NLayer <= 0 || info.NParams == 0 || info.Backend != DeviceCPU {
		t.Fatalf("implausible info: %+v", info)
	}
	toks, err := m.Tokenize("Hello, world!", 0)
	if err != nil || len(toks) == 0 {
		t.Fatalf("Tokenize: %v %v", toks, err)
	}
	text, err := m.Detokenize(toks)
	if err != nil || text != "Hello, world!" {
		t.Fatalf("Detokenize = %q, %v", text, err)
	}
	long := strings.Repeat("word ", 300) // forces the buffer-growing paths
	if toks, err = m.Tokenize(long, AddSpecial); err != nil {
		t.Fatal(err)
	}
	if text, err = m.Detokenize(toks); err != nil || !strings.Contains(text, strings.TrimSpace(long)) {
		t.Fatalf("long round trip failed: %v", err)
	}
	if _, err := m.Tokenize("bad \xff utf8", 0); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("want ErrInvalidUTF8, got %v", err)
	}
	chat, err := m.ChatTemplate([]Message{{"system", "Be brief."}, {"user", "Hi there"}}, true)
	if err != nil || !strings.Contains(chat, "Hi there") || !strings.Contains(chat, "Be brief.") {
		t.Fatalf("ChatTemplate = %q, %v", chat, err)
	}
	if _, err := m.Meta("general.architecture"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Meta("no.such.key"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func collect(t *testing.T, s *Session, ctx context.Context, opts ...GenOption) string {
	t.Helper()
	var b strings.Builder
	for piece, err := range s.Stream(ctx, prompt, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(piece)
	}
	return b.String()
}

func TestGenerateEqualsStreamAndIsDeterministic(t *testing.T) {
	m := sharedModel(t)
	r, err := newSession(t, m).Generate(context.Background(), prompt, greedy...)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text == "" || r.NGenerated == 0 || r.NPrompt == 0 || r.TokensPerSecond() <= 0 {
		t.Fatalf("implausible result: %+v", r)
	}
	t.Logf("greedy: %q (%s, %d tokens, %.1f tok/s)", r.Text, r.StopReason, r.NGenerated, r.TokensPerSecond())
	s2 := newSession(t, m)
	if got := collect(t, s2, context.Background(), greedy...); got != r.Text {
		t.Fatalf("stream %q != generate %q", got, r.Text)
	}
	if lr := s2.LastResult(); lr.NGenerated != r.NGenerated || lr.StopReason != r.StopReason {
		t.Fatalf("LastResult %+v vs %+v", lr, r)
	}
	r3, err := newSession(t, m).Generate(context.Background(), prompt, greedy...)
	if err != nil || r3.Text != r.Text {
		t.Fatalf("second session: %q, %v; want %q", r3.Text, err, r.Text)
	}
}

func TestStopStringAndBreak(t *testing.T) {
	m := sharedModel(t)
	r, err := newSession(t, m).Generate(context.Background(), prompt, greedy...)
	if err != nil || len(r.Text) < 4 {
		t.Fatalf("%q %v", r.Text, err)
	}
	stop := strings.TrimSpace(r.Text)[:2]
	r2, err := newSession(t, m).Generate(context.Background(), prompt, append(greedy, WithStop(stop))...)
	if err != nil || r2.StopReason != StopString || strings.Contains(r2.Text, stop) {
		t.Fatalf("stop %q: %+v %v", stop, r2, err)
	}
	s := newSession(t, m)
	n := 0
	for _, err := range s.Stream(context.Background(), prompt, greedy...) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 {
			break
		}
	}
	if lr := s.LastResult(); lr.StopReason != StopCallback {
		t.Fatalf("break: stop reason %s", lr.StopReason)
	}
}

func TestCancelMidStream(t *testing.T) {
	m := sharedModel(t)
	s := newSession(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pieces := 0
	var cancelledAt time.Time
	var gotErr error
	for _, err := range s.Stream(ctx, prompt, WithTemperature(0), WithMaxTokens(200), WithIgnoreEOS()) {
		if err != nil {
			gotErr = err
			break
		}
		if pieces++; pieces == 3 {
			cancelledAt = time.Now()
			cancel()
		}
	}
	if !errors.Is(gotErr, ErrCancelled) || !errors.Is(gotErr, context.Canceled) {
		t.Fatalf("want ErrCancelled, got %v after %d pieces", gotErr, pieces)
	}
	// The cancel is sent from another goroutine, so a few more pieces may arrive first.
	since := time.Since(cancelledAt)
	t.Logf("stopped %d pieces and %v after the cancel", pieces-3, since)
	if pieces > 3+10 || since > 3*time.Second {
		t.Fatalf("cancel not prompt: %d pieces, %v", pieces, since)
	}
	if lr := s.LastResult(); lr.StopReason != StopCancelled || lr.NGenerated >= 200 {
		t.Fatalf("LastResult after cancel: %+v", lr)
	}
	// The session stays usable; an already-cancelled context fails fast.
	if _, err := s.Generate(ctx, "x"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("done ctx: want ErrCancelled, got %v", err)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Generate(context.Background(), prompt, WithTemperature(0), WithMaxTokens(4)); err != nil || r.NGenerated == 0 {
		t.Fatalf("after cancel: %+v %v", r, err)
	}
}

func TestContextFull(t *testing.T) {
	m := sharedModel(t)
	s, err := m.NewSession(WithContextSize(8))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Generate(context.Background(), strings.Repeat("many words here ", 10), greedy...)
	if !errors.Is(err, ErrContextFull) {
		t.Fatalf("want ErrContextFull, got %v", err)
	}
}

func TestConcurrentSessions(t *testing.T) {
	m := sharedModel(t)
	opts := []GenOption{WithTemperature(0), WithMaxTokens(8)}
	want, err := newSession(t, m).Generate(context.Background(), prompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := m.NewSession(WithContextSize(64), WithThreads(1))
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			r, err := s.Generate(context.Background(), prompt, opts...)
			if err == nil && r.Text != want.Text {
				err = errors.New("got " + r.Text + ", want " + want.Text)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGCPressure(t *testing.T) {
	m := sharedModel(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
				_ = make([]byte, 1<<16)
			}
		}
	}()
	want, err := newSession(t, m).Generate(context.Background(), prompt, greedy...)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := m.NewSession(WithContextSize(128), WithThreads(1))
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, s, context.Background(), append(greedy, WithStop("\x01never"))...)
		if got != want.Text {
			t.Errorf("under GC: %q, want %q", got, want.Text)
		}
		_ = s // not closed: left to the cleanup
		runtime.GC()
	}
	close(stop)
	<-done
}

func TestCloseAndUseAfterClose(t *testing.T) {
	m, err := Open(modelPath(t), WithDevice(DeviceCPU))
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(WithContextSize(64), WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	// Closing the model first keeps the session usable until it closes too.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generate(context.Background(), prompt, WithMaxTokens(2)); err != nil {
		t.Fatalf("session after model close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Info(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Info after Close: %v", err)
	}
	if _, err := m.Tokenize("x", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Tokenize after Close: %v", err)
	}
	if _, err := m.NewSession(); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewSession after Close: %v", err)
	}
	if _, err := s.Generate(context.Background(), prompt); !errors.Is(err, ErrClosed) {
		t.Fatalf("Generate after Close: %v", err)
	}
	for _, err := range s.Stream(context.Background(), prompt) {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Stream after Close: %v", err)
		}
	}
	if err := s.Reset(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset after Close: %v", err)
	}
	var nilModel *Model
	if err := nilModel.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseWhileGenerating(t *testing.T) {
	m := sharedModel(t)
	s, err := m.NewSession(WithContextSize(256), WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		var err error
		n := 0
		for _, e := range s.Stream(context.Background(), prompt, WithMaxTokens(200), WithIgnoreEOS()) {
			if n++; n == 1 {
				close(started)
			}
			err = e
		}
		errc <- err
	}()
	<-started
	s.Close()
	if err := <-errc; !errors.Is(err, ErrCancelled) {
		t.Fatalf("want ErrCancelled after Close, got %v", err)
	}
}

func TestChat(t *testing.T) {
	m := sharedModel(t)
	r, err := m.Chat(context.Background(), []Message{{"user", "Say hello."}},
		WithTemperature(0), WithMaxTokens(8), WithSession(WithContextSize(128), WithThreads(1)))
	if err != nil || r.NGenerated == 0 {
		t.Fatalf("Chat: %+v %v", r, err)
	}
	t.Logf("chat reply: %q", r.Text)
}

// TestPanicInStreamBody: Stream pulls pieces, so a panic in the loop body unwinds through Go
// only; it propagates to the caller, the generation is stopped and freed, the session stays
// usable.
func TestPanicInStreamBody(t *testing.T) {
	m := sharedModel(t)
	s := newSession(t, m)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want boom", r)
			}
		}()
		for range s.Stream(context.Background(), prompt, greedy...) {
			panic("boom")
		}
	}()
	if lr := s.LastResult(); lr.StopReason != StopCallback || lr.NGenerated != 1 {
		t.Fatalf("after panic: %+v", lr)
	}
	r, err := s.Generate(context.Background(), prompt, WithTemperature(0), WithMaxTokens(4), WithIgnoreEOS())
	if err != nil || r.NGenerated != 4 {
		t.Fatalf("after panic: %+v %v", r, err)
	}
}

func TestApplyChatTemplate(t *testing.T) {
	m := sharedModel(t)
	// SmolLM2's own template (jinja2 output, tests/data/chat_templates/golden_chat.json).
	got, err := m.ApplyChatTemplate([]ChatMessage{{Role: "user", Content: "Hi there"}}, ChatOptions{AddAssistant: true})
	want := "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n" +
		"<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
	if err != nil || got != want {
		t.Fatalf("ApplyChatTemplate = %q, %v", got, err)
	}
	// The caller's template with tool calls, None content, tools, extra variables, pinned time.
	when := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	tmpl := "{% for m in messages %}{{ m.role }}:{{ m.content }}{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %}" +
		"{% if m.content is none %}<none>{% endif %}|{% endfor %}{{ tools | length }} {{ enable_thinking }} {{ strftime_now('%Y-%m-%d') }}"
	got, err = m.ApplyChatTemplate([]ChatMessage{
		{Role: "user", Content: "Hi é"},
		{Role: "assistant", NoContent: true, ToolCallsJSON: `[{"function":{"name":"f","arguments":{"a":1}}}]`},
	}, ChatOptions{Template: tmpl, ToolsJSON: `[{"type":"function"}]`, ExtraJSON: `{"enable_thinking": false}`, FixedTime: &when})
	want = `user:Hi é|assistant:None[{"function": {"name": "f", "arguments": {"a": 1}}}]<none>|1 False 2025-01-15`
	if err != nil || got != want {
		t.Fatalf("ApplyChatTemplate = %q, %v", got, err)
	}
	if _, err := m.ApplyChatTemplate(nil, ChatOptions{Template: "a\n{{ raise_exception('nope') }}"}); !errors.Is(err, ErrTemplate) ||
		!strings.Contains(err.Error(), "line 2, column 4: nope") {
		t.Fatalf("want ErrTemplate at line 2, got %v", err)
	}
	if _, err := m.ApplyChatTemplate(nil, ChatOptions{ToolsJSON: "[oops"}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "tools_json") {
		t.Fatalf("want ErrInvalidArgument naming tools_json, got %v", err)
	}
	if _, err := m.ApplyChatTemplate(nil, ChatOptions{TemplateName: "tool_use"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound for a missing named template, got %v", err)
	}
}

func chatTemplateFile(t *testing.T, stem string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "tests", "data", "chat_templates", "templates", stem+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const parseTools = `[{"type": "function", "function": {"name": "get_weather", "description": "Weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
  {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]`

func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON %s, want %s", got, want)
	}
}

func TestChatParse(t *testing.T) {
	m := sharedModel(t)
	hermes := ChatOptions{Template: chatTemplateFile(t, "Qwen-Qwen2.5-7B-Instruct"), ToolsJSON: parseTools}
	// Only a call: content is null, the arguments are a JSON string.
	msg, err := m.ChatParse("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>", hermes)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Role != "assistant" || msg.Content != nil || msg.ReasoningContent != "" || len(msg.ToolCalls) != 1 {
		t.Fatalf("ChatParse = %+v (%s)", msg, msg.JSON)
	}
	c := msg.ToolCalls[0]
	if c.Type != "function" || c.Function.Name != "get_weather" || !strings.HasPrefix(c.ID, "call_") {
		t.Fatalf("tool call %+v", c)
	}
	jsonEqual(t, c.Function.Arguments, `{"city": "Paris", "days": 2}`)
	if !strings.HasPrefix(msg.JSON, `{"role":"assistant","content":null,`) {
		t.Fatalf("JSON = %s", msg.JSON)
	}
	// Text and two calls (compact JSON, a multi-byte character).
	msg, err = m.ChatParse("I'll look.\n<tool_call>{\"name\":\"search\",\"arguments\":{\"q\":\"caf\u00e9\"}}</tool_call>\n"+
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>", hermes)
	if err != nil || msg.Content == nil || *msg.Content != "I'll look." || len(msg.ToolCalls) != 2 ||
		msg.ToolCalls[0].Function.Name != "search" || msg.ToolCalls[1].Function.Name != "get_weather" ||
		msg.ToolCalls[0].ID == msg.ToolCalls[1].ID {
		t.Fatalf("ChatParse = %+v, %v", msg, err)
	}
	jsonEqual(t, msg.ToolCalls[0].Function.Arguments, `{"q": "caf\u00e9"}`)
	// Plain text (longer than the first 256-byte buffer): content only, as generated.
	long := strings.Repeat("All work and no play. ", 40)
	msg, err = m.ChatParse(long, hermes)
	if err != nil || msg.Content == nil || *msg.Content != long || msg.ToolCalls != nil {
		t.Fatalf("ChatParse(long) = %+v, %v", msg, err)
	}
	// Reasoning with Qwen3's template.
	qwen3 := ChatOptions{Template: chatTemplateFile(t, "Qwen-Qwen3-0.6B")}
	msg, err = m.ChatParse("<think>\nFirst, 2+2.\n</think>\n\nIt is 4.", qwen3)
	if err != nil || msg.ReasoningContent != "First, 2+2." || msg.Content == nil || *msg.Content != "It is 4." || len(msg.ToolCalls) != 0 {
		t.Fatalf("ChatParse(think) = %+v, %v", msg, err)
	}
	// The model's own template (SmolLM2: no tool calls, no reasoning).
	msg, err = m.ChatParse("Hello there!", ChatOptions{})
	if err != nil || msg.Content == nil || *msg.Content != "Hello there!" || msg.JSON != `{"role":"assistant","content":"Hello there!"}` {
		t.Fatalf("ChatParse(own template) = %+v, %v", msg, err)
	}
	// Errors.
	if _, err := m.ChatParse("x", ChatOptions{ToolsJSON: "[oops"}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "tools_json") {
		t.Fatalf("want ErrInvalidArgument naming tools_json, got %v", err)
	}
	if _, err := m.ChatParse("x", ChatOptions{ExtraJSON: "[1]"}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "extra_json") {
		t.Fatalf("want ErrInvalidArgument naming extra_json, got %v", err)
	}
	if _, err := m.ChatParse("x", ChatOptions{TemplateName: "tool_use"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound for a missing named template, got %v", err)
	}
	if _, err := m.ChatParse("bad \xff byte", ChatOptions{}); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("want ErrInvalidUTF8, got %v", err)
	}
}

// batchPrompts are eight different prompts (different lengths, so the sequences join and leave
// the batch at different steps).
var batchPrompts = []string{"The capital of France is", "Once upon a time", "def fibonacci(n):",
	"The three primary colors are", "In 1969, the first", "Water boils at", "A haiku about the sea:",
	"The quick brown fox"}

func TestMaxBatchGreedyEqualsAlone(t *testing.T) {
	p := modelPath(t)
	plain := sharedModel(t)
	want := make([]string, len(batchPrompts))
	for i, q := range batchPrompts {
		r, err := newSession(t, plain).Generate(context.Background(), q, greedy...)
		if err != nil {
			t.Fatal(err)
		}
		if r.NGenerated == 0 {
			t.Fatalf("prompt %d: nothing generated", i)
		}
		want[i] = r.Text
	}
	m, err := Open(p, WithDevice(DeviceCPU), WithMaxBatch(8))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := make([]string, len(batchPrompts))
	errs := make([]error, len(batchPrompts))
	var ready, wg sync.WaitGroup
	ready.Add(len(batchPrompts))
	for i, q := range batchPrompts {
		wg.Go(func() {
			s, err := m.NewSession(WithContextSize(256), WithThreads(1))
			ready.Done()
			ready.Wait() // start together, so that the decode steps overlap
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			// Stream on half of them: each caller gets its own pieces through its own callback.
			if i%2 == 0 {
				var b strings.Builder
				for piece, err := range s.Stream(context.Background(), q, greedy...) {
					if err != nil {
						errs[i] = err
						return
					}
					b.WriteString(piece)
				}
				got[i] = b.String()
				return
			}
			r, err := s.Generate(context.Background(), q, greedy...)
			got[i], errs[i] = r.Text, err
		})
	}
	wg.Wait()
	for i := range batchPrompts {
		if errs[i] != nil {
			t.Errorf("prompt %d: %v", i, errs[i])
		} else if got[i] != want[i] {
			t.Errorf("prompt %d %q: batched %q, alone %q", i, batchPrompts[i], got[i], want[i])
		}
	}
}

func TestMaxBatchOutOfRange(t *testing.T) {
	p := modelPath(t)
	_, err := Open(p, WithMaxBatch(65))
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("want ErrInvalidArgument, got %v", err)
	}
	var ze *Error
	if !errors.As(err, &ze) || !strings.Contains(ze.Message, "max_batch") || !strings.Contains(ze.Message, "65") {
		t.Fatalf("want the library's message about max_batch, got %v", err)
	}
}

func TestLogprobs(t *testing.T) {
	m := sharedModel(t)
	opts := append(append([]GenOption{}, greedy...), WithLogprobs(5))
	r, err := newSession(t, m).Generate(context.Background(), prompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Logprobs) != r.NGenerated || r.NGenerated == 0 {
		t.Fatalf("%d logprobs for %d generated tokens", len(r.Logprobs), r.NGenerated)
	}
	for i, lp := range r.Logprobs {
		if len(lp.Top) != 5 || lp.Token != lp.Top[0].Token || lp.Logprob != lp.Top[0].Logprob || lp.Logprob > 0 {
			t.Fatalf("token %d: greedy must pick the top alternative: %+v", i, lp)
		}
		mass := 0.0
		for j, a := range lp.Top {
			if j > 0 && a.Logprob > lp.Top[j-1].Logprob {
				t.Fatalf("token %d: alternatives not descending: %+v", i, lp.Top)
			}
			mass += math.Exp(float64(a.Logprob))
		}
		if mass > 1+1e-5 {
			t.Fatalf("token %d: top-5 mass %g > 1", i, mass)
		}
	}
	// The pull API reports the same values, piece by piece (each piece's token last).
	var pulled []TokenLogprobs
	var text strings.Builder
	for p, err := range newSession(t, m).StreamPieces(context.Background(), prompt, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Logprobs) == 0 || p.Logprobs[len(p.Logprobs)-1].Token != p.Token {
			t.Fatalf("piece %q: token %d, logprobs %+v", p.Text, p.Token, p.Logprobs)
		}
		text.WriteString(p.Text)
		pulled = append(pulled, p.Logprobs...)
	}
	if text.String() != r.Text || !reflect.DeepEqual(pulled, r.Logprobs) {
		t.Fatalf("StreamPieces differs from Generate:\n%q %+v\n%q %+v", text.String(), pulled, r.Text, r.Logprobs)
	}
	// Off by default; out of range is an invalid argument.
	r0, err := newSession(t, m).Generate(context.Background(), prompt, greedy...)
	if err != nil || r0.Logprobs != nil || r0.Text != r.Text {
		t.Fatalf("without WithLogprobs: %+v %v", r0, err)
	}
	for _, bad := range []int{-1, MaxLogprobs + 1} {
		_, err := newSession(t, m).Generate(context.Background(), prompt, append(greedy, WithLogprobs(bad))...)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "n_logprobs") {
			t.Fatalf("WithLogprobs(%d): %v", bad, err)
		}
	}
}

func TestChoiceJSON(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, `[]`}, {[]string{"a", "b <c> & \"d\""}, `["a","b <c> & \"d\""]`}} {
		if got := choiceJSON(c.in); got != c.want {
			t.Errorf("choiceJSON(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// constrained runs a greedy chat turn under opts (a constraint) and wants it to end with StopEOS.
func constrained(t *testing.T, m *Model, question string, opts ...GenOption) string {
	t.Helper()
	opts = append([]GenOption{WithTemperature(0), WithMaxTokens(200), WithSession(WithContextSize(1024), WithThreads(1))}, opts...)
	r, err := m.Chat(context.Background(), []Message{{Role: "user", Content: question}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != StopEOS {
		t.Fatalf("stop reason %v, want StopEOS (a complete constrained text): %q", r.StopReason, r.Text)
	}
	return r.Text
}

func TestConstraints(t *testing.T) {
	m := sharedModel(t)
	if err := m.CheckConstraint(ConstraintRegex, "[0-9]+"); errors.Is(err, ErrUnsupported) {
		t.Skipf("libzerfoo was built without constraints: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}

	const schema = `{"type": "object",
	  "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer", "minimum": 0, "maximum": 150}},
	  "required": ["name", "age"], "additionalProperties": false}`
	if err := m.CheckConstraint(ConstraintJSONSchema, schema); err != nil {
		t.Fatal(err)
	}
	text := constrained(t, m, "Describe Alice, a 30 year old administrator, as JSON.", WithJSONSchema(schema))
	var person struct {
		Name *string `json:"name"`
		Age  *int    `json:"age"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&person); err != nil || person.Name == nil || person.Age == nil || *person.Age < 0 || *person.Age > 150 {
		t.Fatalf("JSON-schema output %q: %+v %v", text, person, err)
	}

	const re = `(yes|no), because [a-z ,]{1,60}\.`
	text = constrained(t, m, "Is the sky blue? Answer yes or no and explain.", WithRegex(re))
	if !regexp.MustCompile("^" + re + "$").MatchString(text) {
		t.Fatalf("regex output %q does not match %s", text, re)
	}

	choices := []string{"red", "green", "blue (dark)", "no idea"}
	text = constrained(t, m, "What colour is grass?", WithChoice(choices...))
	if !slices.Contains(choices, text) {
		t.Fatalf("choice output %q is not one of %q", text, choices)
	}

	const lark = "start: \"The answer is \" NUMBER \".\"\nNUMBER: /[0-9]{1,4}/\n"
	text = constrained(t, m, "What is 6 times 7?", WithLarkGrammar(lark))
	if !regexp.MustCompile(`^The answer is [0-9]{1,4}\.$`).MatchString(text) {
		t.Fatalf("Lark output %q", text)
	}

	// The pull API is constrained the same way.
	var pulled strings.Builder
	s := newSession(t, m)
	for p, err := range s.StreamPieces(context.Background(), "Pick a number:", WithTemperature(0), WithRegex("[0-9]{2}")) {
		if err != nil {
			t.Fatal(err)
		}
		pulled.WriteString(p.Text)
	}
	if !regexp.MustCompile(`^[0-9]{2}$`).MatchString(pulled.String()) {
		t.Fatalf("StreamPieces under [0-9]{2}: %q", pulled.String())
	}

	// Invalid constraints: ErrInvalidArgument with the compiler's message, from generation
	// (nothing evaluated) and from CheckConstraint alike.
	for _, c := range []struct {
		opt     GenOption
		kind    ConstraintKind
		text    string
		message string
	}{
		{WithRegex("([a-z"), ConstraintRegex, "([a-z", "invalid regular expression"},
		{WithJSONSchema(`{"type": 12}`), ConstraintJSONSchema, `{"type": 12}`, "invalid JSON schema"},
		{WithChoice(), ConstraintChoice, "[]", "non-empty"},
		{WithLarkGrammar("start: missing_rule"), ConstraintLark, "start: missing_rule", "Lark grammar"},
	} {
		s := newSession(t, m)
		_, err := s.Generate(context.Background(), prompt, WithTemperature(0), c.opt)
		var ze *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &ze) || !strings.Contains(ze.Message, c.message) {
			t.Fatalf("generate with %q: want ErrInvalidArgument with %q, got %v", c.text, c.message, err)
		}
		if n, err := s.NPast(); n != 0 || err != nil {
			t.Fatalf("%q: %d tokens evaluated (%v), want none", c.text, n, err)
		}
		err = m.CheckConstraint(c.kind, c.text)
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &ze) || !strings.Contains(ze.Message, c.message) {
			t.Fatalf("CheckConstraint(%d, %q): want ErrInvalidArgument with %q, got %v", c.kind, c.text, c.message, err)
		}
	}
	if err := m.CheckConstraint(ConstraintKind(99), "x"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown kind: %v", err)
	}
	// The constraint covers one call: the next one on the session is free again.
	s = newSession(t, m)
	if _, err := s.Generate(context.Background(), prompt, WithTemperature(0), WithMaxTokens(4), WithChoice("x")); err != nil {
		t.Fatal(err)
	}
	r, err := s.Generate(context.Background(), " and", greedy...)
	if err != nil || r.NGenerated == 0 {
		t.Fatalf("unconstrained call after a constrained one: %+v %v", r, err)
	}
}

// cachePrompt is a repeated sentence of about 200 tokens: three full 64-token cache blocks.
var cachePrompt = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)

// lastLogprobs evaluates cachePrompt on a fresh session and returns the log-softmax of the last
// position's logits (the MaxLogprobs most likely tokens of the first greedy token).
func lastLogprobs(t *testing.T, m *Model, opts ...SessionOption) TokenLogprobs {
	t.Helper()
	s, err := m.NewSession(append([]SessionOption{WithContextSize(512), WithThreads(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Generate(context.Background(), cachePrompt, WithTemperature(0), WithMaxTokens(1), WithLogprobs(MaxLogprobs))
	if err != nil {
		t.Fatal(err)
	}
	if r.NGenerated != 1 || len(r.Logprobs) != 1 || len(r.Logprobs[0].Top) != MaxLogprobs {
		t.Fatalf("implausible result: %+v", r)
	}
	return r.Logprobs[0]
}

func TestPrefixCache(t *testing.T) {
	p := modelPath(t)
	// Off: no blocks, no capacity.
	off, err := Open(p, WithDevice(DeviceCPU), WithPrefixCacheMiB(-1))
	if err != nil {
		t.Fatal(err)
	}
	lastLogprobs(t, off)
	ci, err := off.CacheInfo()
	if err != nil || ci.BlockTokens != 0 || ci.Blocks != 0 || ci.HitTokens != 0 {
		t.Fatalf("cache off: %+v %v", ci, err)
	}
	off.Close()
	if _, err := off.CacheInfo(); !errors.Is(err, ErrClosed) {
		t.Fatalf("CacheInfo after Close: %v", err)
	}

	// The default: the second session copies the blocks the first stored, with the same logits.
	m, err := Open(p, WithDevice(DeviceCPU))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	toks, err := m.Tokenize(cachePrompt, AddSpecial)
	if err != nil || len(toks) < 193 || len(toks) > 256 {
		t.Fatalf("prompt of %d tokens (want about 200), %v", len(toks), err)
	}
	ci, err = m.CacheInfo()
	if err != nil || ci.BlockTokens != 64 || ci.CapacityBytes != 256<<20 || ci.Blocks != 0 || ci.HitTokens != 0 {
		t.Fatalf("fresh default cache: %+v %v", ci, err)
	}
	first := lastLogprobs(t, m)
	ci1, _ := m.CacheInfo()
	second := lastLogprobs(t, m)
	ci2, err := m.CacheInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d prompt tokens; after one session %+v; after two %+v", len(toks), ci1, ci2)
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("logits differ with the cached prefix:\n%+v\n%+v", first, second)
	}
	if ci2.HitTokens < 128 || ci2.Blocks < 2 || ci2.Bytes == 0 || ci2.Bytes > ci2.CapacityBytes || ci2.StoredBlocks < ci2.Blocks {
		t.Fatalf("after two sessions: %+v", ci2)
	}

	// A fast-prefill session works and neither reads nor fills the cache.
	fast := lastLogprobs(t, m, WithFastPrefill())
	ci3, _ := m.CacheInfo()
	if fast.Token != first.Token || ci3.HitTokens != ci2.HitTokens || ci3.StoredBlocks != ci2.StoredBlocks {
		t.Fatalf("fast prefill: token %d (exact %d); cache %+v before, %+v after", fast.Token, first.Token, ci2, ci3)
	}
	// A live session reads the cached blocks in place (Linux: their pages mapped, not copied);
	// closed sessions hold no mappings.
	if ci2.MappedBlocks != 0 {
		t.Fatalf("closed sessions still map blocks: %+v", ci2)
	}
	held, err := m.NewSession(WithContextSize(512), WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Generate(context.Background(), cachePrompt, WithTemperature(0), WithMaxTokens(1)); err != nil {
		t.Fatal(err)
	}
	ciHeld, _ := m.CacheInfo()
	held.Close()
	ciClosed, _ := m.CacheInfo()
	if (runtime.GOOS == "linux" && ciHeld.MappedBlocks < 2) || ciClosed.MappedBlocks != 0 {
		t.Fatalf("mapped blocks: %d with a live session, %d after Close", ciHeld.MappedBlocks, ciClosed.MappedBlocks)
	}
}

func TestPrefixCacheOutOfRange(t *testing.T) {
	p := modelPath(t)
	for _, bad := range []int{-2, 1<<20 + 1} {
		_, err := Open(p, WithPrefixCacheMiB(bad))
		var ze *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &ze) || !strings.Contains(ze.Message, "prefix_cache_mib") {
			t.Fatalf("WithPrefixCacheMiB(%d): want ErrInvalidArgument about prefix_cache_mib, got %v", bad, err)
		}
	}
}

// A session with a Q8_0 KV cache generates; on this short greedy answer it says what F16 says.
func TestQuantizedKVSessionGenerates(t *testing.T) {
	m := sharedModel(t)
	want, err := newSession(t, m).Generate(context.Background(), prompt, greedy...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(WithContextSize(512), WithKVType(KVQ8_0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Generate(context.Background(), prompt, greedy...)
	if err != nil {
		t.Fatal(err)
	}
	if r.NGenerated == 0 || r.Text == "" {
		t.Fatalf("implausible result: %+v", r)
	}
	t.Logf("q8_0: %q; f16: %q", r.Text, want.Text)
	if _, err := m.NewSession(WithKVType(KVQ8_0), WithKVTypeV(9)); err == nil || !strings.Contains(err.Error(), "kv_type_v") {
		t.Fatalf("kv_type_v 9: %v", err)
	}
}

func TestOptionsKeepReservedZero(t *testing.T) {
	// The option types take unexported structs, so only this package's options can set fields,
	// and none of them touches a reserved field.
	for _, typ := range []reflect.Type{reflect.TypeFor[SessionOption](), reflect.TypeFor[ModelOption]()} {
		if in := typ.In(0).Elem(); in.PkgPath() == "" || in.Name()[0] != 'c' {
			t.Fatalf("%v takes %v, which other packages could construct", typ, in)
		}
	}
	var sp cSessionParams
	for _, o := range []SessionOption{WithContextSize(7), WithThreads(3), WithKVType(KVF32), WithKVTypeV(KVQ4_0),
		WithFastPrefill()} {
		o(&sp)
	}
	if sp.flags != 0x1 || sp.reserved0 != 0 || sp.reserved1 != 0 || sp.kvTypeV != 3 {
		t.Fatalf("session params %+v", sp)
	}
	var mp cModelParams
	for _, o := range []ModelOption{WithDevice(DeviceCPU), WithGPU(1), WithDefaultThreads(2), WithMaxBatch(4),
		WithPrefixCacheMiB(-1), WithVocabOnly(), WithNoMmap()} {
		o(&mp)
	}
	if mp.prefixCacheMiB != -1 || mp.reserved0 != 0 || mp.reserved1 != 0 || mp.reserved2 != 0 {
		t.Fatalf("model params %+v", mp)
	}
	var ep cEmbedParams
	for _, o := range []EmbedOption{WithPooling(PoolingMean), WithNoNormalize(), WithDimensions(8), WithEmbedThreads(2)} {
		o(&ep)
	}
	if ep.pooling != 1 || ep.flags != 0x1 || ep.dimensions != 8 || ep.nThreads != 2 || ep.reserved != 0 {
		t.Fatalf("embed params %+v", ep)
	}
}

func TestChatToolGrammarAndLazyConstraint(t *testing.T) {
	m := sharedModel(t)
	if err := m.CheckConstraint(ConstraintRegex, "[0-9]+"); errors.Is(err, ErrUnsupported) {
		t.Skipf("libzerfoo was built without constraints: %v", err)
	}
	hermes := ChatOptions{Template: chatTemplateFile(t, "Qwen-Qwen2.5-7B-Instruct"), ToolsJSON: parseTools}
	g, err := m.ChatToolGrammar(hermes, true)
	if err != nil || !g.Native || g.Trigger != "<tool_call>" || g.Grammar == "" || g.LazyGrammar == "" {
		t.Fatalf("ChatToolGrammar = %+v, %v", g, err)
	}
	// Required: the output is one call in Hermes' format that ChatParse reads back.
	text := constrained(t, m, "What is the weather in Paris?", WithConstraint(ConstraintLark, g.Grammar))
	msg, err := m.ChatParse(text, hermes)
	if err != nil || len(msg.ToolCalls) != 1 || !strings.HasPrefix(text, "<tool_call>") {
		t.Fatalf("constrained call %q: %+v, %v", text, msg, err)
	}
	// A lazy constraint: free until the trigger, then the constraint from where it starts.
	text = constrained(t, m, "Count from 1 to 10, separated by commas.", WithRegex("3, 4, done"), WithConstraintTrigger("3"))
	if !strings.HasSuffix(text, "3, 4, done") || !strings.Contains(text, "1") {
		t.Fatalf("lazy constraint output %q", text)
	}
	// Errors: no tools; a trigger without a constraint.
	if _, err := m.ChatToolGrammar(ChatOptions{}, false); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "tools_json") {
		t.Fatalf("ChatToolGrammar without tools: %v", err)
	}
	if _, err := m.Chat(context.Background(), []Message{{Role: "user", Content: "hi"}}, WithMaxTokens(2), WithConstraintTrigger("x")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("trigger without a constraint: %v", err)
	}
}

func TestEmbed(t *testing.T) {
	m := sharedModel(t)
	dim, err := m.EmbedDimension()
	if err != nil || dim <= 0 {
		t.Fatalf("EmbedDimension = %d, %v", dim, err)
	}
	info, _ := m.Info()
	if dim != info.NEmbd {
		t.Fatalf("EmbedDimension %d, hidden size %d", dim, info.NEmbd)
	}
	texts := []string{"The cat sat on the mat.", "Paris is the capital of France.", "zerfoo"}
	batch, err := m.Embed(texts)
	if err != nil || len(batch) != 3 {
		t.Fatalf("Embed = %d vectors, %v", len(batch), err)
	}
	for i, v := range batch {
		if len(v) != dim {
			t.Fatalf("vector %d has %d values, want %d", i, len(v), dim)
		}
		norm := 0.0
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if math.Abs(math.Sqrt(norm)-1) > 1e-5 {
			t.Fatalf("vector %d norm %g", i, math.Sqrt(norm))
		}
		one, err := m.Embed([]string{texts[i]})
		if err != nil || !reflect.DeepEqual(one[0], v) {
			t.Fatalf("text %d alone differs from the batch (%v)", i, err)
		}
	}
	twice, err := m.Embed([]string{texts[0], texts[0]})
	if err != nil || !reflect.DeepEqual(twice[0], twice[1]) || !reflect.DeepEqual(twice[0], batch[0]) {
		t.Fatalf("the same text twice gives different vectors (%v)", err)
	}
	// Tokens as Embed tokenizes them give the same vector.
	toks, err := m.Tokenize(texts[1], AddSpecial|ParseSpecial)
	if err != nil {
		t.Fatal(err)
	}
	byTok, err := m.EmbedTokens([][]int32{toks})
	if err != nil || !reflect.DeepEqual(byTok[0], batch[1]) {
		t.Fatalf("EmbedTokens differs from Embed (%v)", err)
	}
	// Truncation: the first 16 values, renormalized.
	if d, err := m.EmbedDimension(WithDimensions(16)); err != nil || d != 16 {
		t.Fatalf("EmbedDimension(16) = %d, %v", d, err)
	}
	short, err := m.Embed(texts[:1], WithDimensions(16))
	if err != nil || len(short[0]) != 16 {
		t.Fatalf("Embed(WithDimensions(16)) = %v, %v", short, err)
	}
	raw, err := m.Embed(texts[:1], WithNoNormalize(), WithDimensions(16))
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, x := range raw[0] {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	for i := range short[0] {
		if math.Abs(float64(short[0][i])-float64(raw[0][i])/n) > 1e-5 {
			t.Fatalf("value %d: %g, raw/norm %g", i, short[0][i], float64(raw[0][i])/n)
		}
	}
	// Errors.
	if _, err := m.Embed(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Embed(nil): %v", err)
	}
	if _, err := m.Embed(texts[:1], WithDimensions(dim+1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("too many dimensions: %v", err)
	}
	if _, err := m.Embed(texts[:1], WithPooling(Pooling(42))); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown pooling: %v", err)
	}
	if _, err := m.EmbedTokens([][]int32{{-1}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad token: %v", err)
	}
	if _, err := m.EmbedDimension(WithPooling(PoolingNone)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("PoolingNone: %v", err)
	}
}

func TestRerankUnsupported(t *testing.T) {
	m := sharedModel(t)
	if _, err := m.Rerank("what is a cat?", []string{"a cat is an animal", "Paris"}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Rerank on a model without a classification head: %v", err)
	}
}

func TestDrafts(t *testing.T) {
	m := sharedModel(t)
	copyPrompt := "<|im_start|>user\nRepeat this text exactly: The quick brown fox jumps over the lazy dog. " +
		"The quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n"
	opts := []GenOption{WithTemperature(0), WithMaxTokens(40)}
	plain, err := newSession(t, m).Generate(context.Background(), copyPrompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if plain.NDrafted != 0 || plain.NAccepted != 0 {
		t.Fatalf("drafts without WithDraftMax: %+v", plain)
	}
	drafted, err := newSession(t, m).Generate(context.Background(), copyPrompt, append(opts, WithDraftMax(8), WithDraftMin(1))...)
	if err != nil {
		t.Fatal(err)
	}
	if drafted.Text != plain.Text {
		t.Fatalf("drafted output %q, plain %q", drafted.Text, plain.Text)
	}
	t.Logf("drafted %d, accepted %d: %q", drafted.NDrafted, drafted.NAccepted, drafted.Text)
	if drafted.NAccepted <= 0 || drafted.NDrafted < drafted.NAccepted {
		t.Fatalf("n_drafted %d, n_accepted %d", drafted.NDrafted, drafted.NAccepted)
	}
	if _, err := newSession(t, m).Generate(context.Background(), copyPrompt, WithMaxTokens(2), WithDraftMax(MaxDraft+1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("draft_max > MaxDraft: %v", err)
	}
}

// TestDraftModel: the model as its own draft (the same vocabulary) gives the plain greedy output
// with drafts kept; a draft of another vocabulary (Gemma 3, when present) is refused.
func TestDraftModel(t *testing.T) {
	m := sharedModel(t)
	prompt := "<|im_start|>user\nWrite two sentences about the sea.<|im_end|>\n<|im_start|>assistant\n"
	opts := []GenOption{WithTemperature(0), WithMaxTokens(32)}
	plain, err := newSession(t, m).Generate(context.Background(), prompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, m)
	if err := s.SetDraftModel(m); err != nil {
		t.Fatal(err)
	}
	drafted, err := s.Generate(context.Background(), prompt, append(opts, WithDraftMax(6))...)
	if err != nil {
		t.Fatal(err)
	}
	if drafted.Text != plain.Text {
		t.Fatalf("with a draft model %q, plain %q", drafted.Text, plain.Text)
	}
	t.Logf("drafted %d, accepted %d", drafted.NDrafted, drafted.NAccepted)
	if drafted.NAccepted <= 0 || drafted.NDrafted < drafted.NAccepted {
		t.Fatalf("n_drafted %d, n_accepted %d", drafted.NDrafted, drafted.NAccepted)
	}
	if err := s.SetDraftModel(nil); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	gemmaPath := filepath.Join(home, ".cache/zerfoo/models/gemma-3-270m-q4_k_m.gguf")
	if _, err := os.Stat(gemmaPath); err != nil {
		t.Skipf("Gemma 3 missing for the vocabulary check: %v", err)
	}
	gemma, err := Open(gemmaPath, WithDevice(DeviceCPU))
	if err != nil {
		t.Fatal(err)
	}
	defer gemma.Close()
	err = s.SetDraftModel(gemma)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "vocabulary") {
		t.Fatalf("a Gemma draft for SmolLM2: %v", err)
	}
}
