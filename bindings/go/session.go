package zerfoo

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Session holds the KV cache and sampler state of one conversation. Its methods may be called
// from any goroutine but run one at a time (concurrent calls wait). Close may be called at any
// time: it cancels a running generation first.
type Session struct {
	h       *sessionHandle
	cleanup runtime.Cleanup
	last    Result // guarded by h.busy
}

type sessionHandle struct {
	busy    sync.Mutex // held for every C call that uses the session (except cancel)
	state   sync.Mutex // guards the fields below; never held across a long C call
	ptr     uintptr
	model   *modelHandle
	closed  bool
	running bool // a zf_generate is in progress
	sent    bool // zf_session_cancel was called during the running generate
}

// NewSession creates a session on the model.
func (m *Model) NewSession(opts ...SessionOption) (*Session, error) {
	var p cSessionParams
	lib.sessionInit(&p, unsafe.Sizeof(p))
	for _, o := range opts {
		o(&p)
	}
	var sp uintptr
	err := m.use(func(ptr uintptr) error {
		err := call("new session", func() int32 { return lib.sessionCreate(ptr, &p, &sp) })
		if err == nil {
			m.h.refs.Add(1)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	h := &sessionHandle{ptr: sp, model: m.h}
	s := &Session{h: h}
	s.cleanup = runtime.AddCleanup(s, (*sessionHandle).close, h)
	return s, nil
}

// cancel asks a running generate to stop; a no-op when none runs.
func (h *sessionHandle) cancel() {
	h.state.Lock()
	defer h.state.Unlock()
	if h.running {
		lib.sessionCancel(h.ptr)
		h.sent = true
	}
}

func (h *sessionHandle) close() {
	h.state.Lock()
	if h.closed {
		h.state.Unlock()
		return
	}
	h.closed = true
	h.state.Unlock()
	h.cancel()
	h.busy.Lock() // wait for a running call to return
	lib.sessionFree(h.ptr)
	h.ptr = 0
	h.busy.Unlock()
	h.model.release()
}

// Close frees the session (cancelling a running generation). It is idempotent.
func (s *Session) Close() error {
	if s == nil || s.h == nil {
		return nil
	}
	s.cleanup.Stop()
	s.h.close()
	return nil
}

// lock takes the session for one call; the caller must unlock h.busy.
func (s *Session) lock() (*sessionHandle, error) {
	if s == nil || s.h == nil {
		return nil, ErrClosed
	}
	h := s.h
	h.busy.Lock()
	if h.closed {
		h.busy.Unlock()
		return nil, ErrClosed
	}
	return h, nil
}

// Reset clears the KV cache and history: the next call starts a new conversation.
func (s *Session) Reset() error {
	h, err := s.lock()
	if err != nil {
		return err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s)
	return call("reset", func() int32 { return lib.sessionReset(h.ptr) })
}

// SetDraftModel gives the session a draft model for speculative decoding
// (zf_session_set_draft_model): with WithDraftMax, drafts come from draft's greedy output
// instead of prompt lookup, and the output is still token for token the output without it. The
// draft must have the model's vocabulary (ErrInvalidArgument naming the first difference
// otherwise). The session keeps the draft model alive; nil removes it.
func (s *Session) SetDraftModel(draft *Model) error {
	h, err := s.lock()
	if err != nil {
		return err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s)
	if draft == nil {
		return call("set draft model", func() int32 { return lib.sessionSetDraft(h.ptr, 0) })
	}
	return draft.use(func(ptr uintptr) error {
		return call("set draft model", func() int32 { return lib.sessionSetDraft(h.ptr, ptr) })
	})
}

// NPast returns the number of tokens in the session's KV cache.
func (s *Session) NPast() (int, error) {
	h, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s)
	var n int32
	err = call("n_past", func() int32 { return lib.sessionNPast(h.ptr, &n) })
	return int(n), err
}

// StopReason says why generation ended.
type StopReason int32

const (
	StopEOS         StopReason = 0 // the model produced EOS/EOT
	StopMaxTokens   StopReason = 1
	StopString      StopReason = 2 // a stop string matched
	StopCallback    StopReason = 3 // the Stream consumer stopped early
	StopCancelled   StopReason = 4 // the context was cancelled (or the session closed)
	StopContextFull StopReason = 5
)

func (r StopReason) String() string {
	names := [...]string{"eos", "max_tokens", "stop_string", "callback", "cancelled", "context_full"}
	if r >= 0 && int(r) < len(names) {
		return names[r]
	}
	return "unknown"
}

// Result is the outcome of a generation.
type Result struct {
	Text       string // the generated text (empty for Stream)
	StopReason StopReason
	NPrompt    int // prompt tokens evaluated by this call
	NGenerated int // tokens sampled by this call
	PromptTime time.Duration
	DecodeTime time.Duration
	// Logprobs has one entry per generated token whose text was delivered, in order, when
	// WithLogprobs asked for them (Generate and Chat; nil otherwise).
	Logprobs []TokenLogprobs
	// NDrafted is the number of tokens drafted by WithDraftMax; NAccepted how many of them were
	// kept (each spared a decode step). Both 0 without drafts.
	NDrafted  int
	NAccepted int
}

// TokenLogprob is a token id and its natural-log probability (zf_token_logprob).
type TokenLogprob struct {
	Token   int32
	Logprob float32
}

// TokenLogprobs is one generated token's log-probability and the most likely alternatives in
// descending order (ties to the lower id; the token itself is among them when it is that likely).
type TokenLogprobs struct {
	TokenLogprob
	Top []TokenLogprob
}

// Piece is a piece of streamed text with the token that completed it and, with WithLogprobs,
// the log-probabilities of every token sampled since the previous piece (this piece's token
// last): a piece may complete several tokens, and no delivered token is left out.
type Piece struct {
	Text     string
	Token    int32
	Logprobs []TokenLogprobs
}

// TokensPerSecond is the decode speed.
func (r Result) TokensPerSecond() float64 {
	if r.DecodeTime <= 0 {
		return 0
	}
	return float64(r.NGenerated) / r.DecodeTime.Seconds()
}

// Generate evaluates prompt and generates until a stop condition, returning the whole text.
// Calling it again continues the conversation unless Reset is called. Cancelling ctx stops
// generation at the next token; the partial Result comes back with an error that matches
// both ErrCancelled and ctx's error.
func (s *Session) Generate(ctx context.Context, prompt string, opts ...GenOption) (Result, error) {
	var b strings.Builder
	var lps []TokenLogprobs
	var lpErr error
	r, err := s.run(ctx, prompt, opts, func(h uintptr, piece string) bool {
		b.WriteString(piece)
		if lpErr == nil {
			var got []TokenLogprobs
			got, lpErr = pieceLogprobs(h)
			lps = append(lps, got...)
		}
		return lpErr == nil
	})
	r.Text = b.String()
	r.Logprobs = lps
	if err == nil && lpErr != nil {
		err = lpErr
	}
	return r, err
}

// Stream is Generate as a Go 1.23 range-over-func iterator of text pieces (whole UTF-8
// characters). Breaking out of the loop stops generation. An error is yielded once, last, with
// an empty piece. It pulls pieces one at a time through the library's pull-style calls
// (zf_generate_begin / zf_generation_next), so the loop body runs in plain Go, outside any C
// call: it may block or panic freely. It must not use this Session (the session is busy until
// the loop ends). LastResult gives the counts afterwards.
func (s *Session) Stream(ctx context.Context, prompt string, opts ...GenOption) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		stopped := false
		_, err := s.pull(ctx, prompt, opts, func(p Piece) bool {
			stopped = !yield(p.Text, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield("", err)
		}
	}
}

// StreamPieces is Stream with each piece's token and, with WithLogprobs, the log-probabilities
// of the tokens it completes (Piece). The same rules as Stream apply.
func (s *Session) StreamPieces(ctx context.Context, prompt string, opts ...GenOption) iter.Seq2[Piece, error] {
	return func(yield func(Piece, error) bool) {
		stopped := false
		_, err := s.pull(ctx, prompt, opts, func(p Piece) bool {
			stopped = !yield(p, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(Piece{}, err)
		}
	}
}

// pieceLogprobs reads zf_session_logprobs for the piece just delivered (nil when off).
func pieceLogprobs(sp uintptr) ([]TokenLogprobs, error) {
	buf := make([]TokenLogprob, 64)
	var n, stride uintptr
	for {
		err := call("logprobs", func() int32 { return lib.sessionLogprobs(sp, &buf[0], uintptr(len(buf)), &n, &stride) })
		if errors.Is(err, ErrBufferTooSmall) && n > uintptr(len(buf)) {
			buf = make([]TokenLogprob, n)
			continue
		}
		if err != nil || n == 0 || stride == 0 {
			return nil, err
		}
		break
	}
	out := make([]TokenLogprobs, 0, n/stride)
	for i := uintptr(0); i+stride <= n; i += stride {
		out = append(out, TokenLogprobs{TokenLogprob: buf[i], Top: buf[i+1 : i+stride : i+stride]})
	}
	return out, nil
}

// LastResult returns the Result of the session's last Generate or Stream (Text is empty).
func (s *Session) LastResult() Result {
	h, err := s.lock()
	if err != nil {
		return Result{}
	}
	defer h.busy.Unlock()
	return s.last
}

func (s *Session) run(ctx context.Context, prompt string, opts []GenOption, fn func(h uintptr, piece string) bool) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{StopReason: StopCancelled}, cancelled(context.Cause(ctx))
	}
	h, err := s.lock()
	if err != nil {
		return Result{}, err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s) // the cleanup must not close the session mid-call

	p, keep := genParams(opts)
	cprompt := cstr(prompt)
	sk := &sink{fn: func(piece string) bool { return fn(h.ptr, piece) }}
	id := registerSink(sk)
	defer sinks.Delete(id)

	stopWatch := h.watch(ctx)
	var r cGenResult
	r.structSize = uint32(unsafe.Sizeof(r))
	err = call("generate", func() int32 {
		return lib.generate(h.ptr, &cprompt[0], uintptr(len(prompt)), &p, trampoline(), id, &r)
	})
	sent := h.unwatch(stopWatch)
	runtime.KeepAlive(cprompt)
	runtime.KeepAlive(keep)
	return s.finish(ctx, h, r, sent, sk.panic, err)
}

// genParams builds the C params; keep holds the stop strings they point to (KeepAlive it
// until the C call that reads them returns).
func genParams(opts []GenOption) (p cGenParams, keep any) {
	var g genConfig
	for _, o := range opts {
		o(&g)
	}
	lib.generateInit(&p, unsafe.Sizeof(p))
	for _, f := range g.set {
		f(&p)
	}
	stops := make([][]byte, len(g.stop))
	ptrs := make([]*byte, len(g.stop))
	for i, st := range g.stop {
		stops[i] = cstr(st)
		ptrs[i] = &stops[i][0]
	}
	if len(ptrs) > 0 {
		p.stop, p.nStop = &ptrs[0], uintptr(len(ptrs))
	}
	var constraint []byte
	if g.constraintKind != ConstraintNone || g.constraint != "" {
		constraint = cstr(g.constraint)
		p.constraint, p.constraintKind = &constraint[0], int32(g.constraintKind)
	}
	var trigger []byte
	if g.trigger != "" {
		trigger = cstr(g.trigger)
		p.constraintTrigger = &trigger[0]
	}
	return p, [4]any{stops, ptrs, constraint, trigger}
}

// finish turns a generation's C result into the Result (with h.busy held).
func (s *Session) finish(ctx context.Context, h *sessionHandle, r cGenResult, sent bool, panicked any, err error) (Result, error) {
	res := Result{
		StopReason: StopReason(r.stopReason), NPrompt: int(r.nPrompt), NGenerated: int(r.nGenerated),
		PromptTime: msDuration(r.promptMs), DecodeTime: msDuration(r.decodeMs),
		NDrafted: int(r.nDrafted), NAccepted: int(r.nAccepted),
	}
	gotCancel := errors.Is(err, ErrCancelled) || (err == nil && res.StopReason == StopCancelled)
	if sent && !gotCancel {
		// The cancel arrived as the call was ending, so the request is still pending and would
		// stop the next call at once; only a reset clears it (as the C CLI does).
		lib.sessionReset(h.ptr)
	}
	s.last = res
	if panicked != nil {
		panic(panicked)
	}
	if gotCancel {
		res.StopReason = StopCancelled
		return res, cancelled(context.Cause(ctx))
	}
	return res, err
}

// pull runs a generation through the pull-style API, passing each piece to fn (false stops)
// outside any C call. A panic in fn stops and frees the generation, then propagates.
func (s *Session) pull(ctx context.Context, prompt string, opts []GenOption, fn func(Piece) bool) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{StopReason: StopCancelled}, cancelled(context.Cause(ctx))
	}
	h, err := s.lock()
	if err != nil {
		return Result{}, err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s) // the cleanup must not close the session mid-generation

	p, keep := genParams(opts)
	cprompt := cstr(prompt)
	stopWatch := h.watch(ctx)
	var gen uintptr
	err = call("generate", func() int32 {
		return lib.generateBegin(h.ptr, &cprompt[0], uintptr(len(prompt)), &p, &gen)
	})
	runtime.KeepAlive(cprompt)
	runtime.KeepAlive(keep)
	var r cGenResult
	r.structSize = uint32(unsafe.Sizeof(r))
	var stopped bool
	var panicked any
	if err == nil {
		stopped, panicked = pullLoop(func() bool {
			buf := make([]byte, 256)
			for {
				var n uintptr
				var token, done int32
				err = call("generate", func() int32 {
					return lib.generationNext(gen, &buf[0], uintptr(len(buf)), &n, &token, &done)
				})
				if errors.Is(err, ErrBufferTooSmall) && n > uintptr(len(buf)) {
					buf = make([]byte, n) // the same piece comes again
					continue
				}
				if err != nil || done != 0 {
					return false
				}
				piece := Piece{Text: string(buf[:n]), Token: token}
				if p.nLogprobs > 0 {
					if piece.Logprobs, err = pieceLogprobs(h.ptr); err != nil {
						return false
					}
				}
				if !fn(piece) {
					return true
				}
			}
		}, func() {
			lib.generationResult(gen, &r)
			lib.generationFree(gen) // stops it if still running; the session stays consistent
		})
	}
	sent := h.unwatch(stopWatch)
	if stopped {
		r.stopReason = int32(StopCallback) // stopped by the consumer (the result was read before the stop)
	}
	return s.finish(ctx, h, r, sent, panicked, err)
}

// pullLoop runs a pull-style loop (true: the consumer stopped it), then free, which also runs
// when the loop panics; a panic counts as a stop and comes back for the caller to re-raise
// once the session is settled.
func pullLoop(loop func() (stopped bool), free func()) (stopped bool, panicked any) {
	defer func() {
		if v := recover(); v != nil {
			stopped, panicked = true, v
		}
		free()
	}()
	return loop(), nil
}

// watch marks a call running and arranges for ctx's end to cancel it from another goroutine
// (zf_session_cancel).
func (h *sessionHandle) watch(ctx context.Context) (stop func() bool) {
	h.state.Lock()
	h.running, h.sent = true, false
	h.state.Unlock()
	return context.AfterFunc(ctx, h.cancel)
}

// unwatch ends watch and reports whether a cancel was sent.
func (h *sessionHandle) unwatch(stop func() bool) (sent bool) {
	stop()
	h.state.Lock()
	defer h.state.Unlock()
	h.running = false
	return h.sent
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
