package zerfoo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"time"
	"unsafe"
)

// TurnEventKind is the kind of a chat turn's event (ZF_TURN_*).
type TurnEventKind int32

const (
	TurnContent   TurnEventKind = 1 // Text: more of the answer's content
	TurnReasoning TurnEventKind = 2 // Text: more of the reasoning (thinking) text
	TurnToolCall  TurnEventKind = 3 // a tool call begins: ToolIndex, ToolID, ToolName
	TurnToolArgs  TurnEventKind = 4 // Text: more of call ToolIndex's arguments (JSON text)
	TurnLogprobs  TurnEventKind = 5 // Logprobs of tokens whose text is held back (markers, a call arriving)
	TurnDone      TurnEventKind = 6 // the last event: Result
)

func (k TurnEventKind) String() string {
	names := [...]string{"", "content", "reasoning", "tool_call", "tool_args", "logprobs", "done"}
	if k > 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("TurnEventKind(%d)", int32(k))
}

// FinishReason says why a turn ended, with OpenAI's names (ZF_FINISH_*).
type FinishReason int32

const (
	FinishStop      FinishReason = 0 // the model ended the turn (or a stop string, or the caller)
	FinishLength    FinishReason = 1 // max tokens or the context ended it
	FinishToolCalls FinishReason = 2 // the turn ended with tool calls to run
)

// String is OpenAI's finish_reason: "stop", "length" or "tool_calls".
func (r FinishReason) String() string {
	names := [...]string{"stop", "length", "tool_calls"}
	if r >= 0 && int(r) < len(names) {
		return names[r]
	}
	return "unknown"
}

// TurnEvent is one event of a chat turn. The events, concatenated per kind, are the turn's final
// message: the TurnContent texts its content, the TurnReasoning texts its reasoning, each
// TurnToolCall starts call ToolIndex and that call's TurnToolArgs texts are its arguments. Every
// field is a copy (nothing borrowed from the library).
type TurnEvent struct {
	Kind      TurnEventKind
	Text      string // TurnContent, TurnReasoning, TurnToolArgs
	ToolIndex int    // TurnToolCall, TurnToolArgs: the call's index (0, 1, ...); else -1
	ToolID    string // TurnToolCall
	ToolName  string // TurnToolCall
	// Logprobs (WithLogprobs only): the tokens generated since the previous event that carried
	// any, each with its most likely alternatives.
	Logprobs []TokenLogprobs
	Result   *TurnResult // TurnDone: how the turn ended and its message
}

// TurnResult is a finished (or stopped) chat turn.
type TurnResult struct {
	Message      AssistantMessage // content, reasoning and tool calls (Message.JSON: the library's text)
	FinishReason FinishReason
	StopReason   StopReason
	Usage        TurnUsage
}

// TurnUsage counts a turn's tokens and times it.
type TurnUsage struct {
	PromptTokens     int // the rendered prompt's tokens
	CachedTokens     int // of those, not evaluated again (kept in the session or the prefix cache)
	CompletionTokens int // tokens generated
	DraftedTokens    int // drafted by speculative decoding (WithDraftMax)
	AcceptedTokens   int // of those, kept
	PromptTime       time.Duration
	DecodeTime       time.Duration
}

// WithTurnTemplate renders ChatTurn's prompt with the caller's own Jinja chat template instead of
// the model's (zf_turn_params.template_text). Ignored by calls other than ChatTurn,
// ChatTurnMessage and ChatTurnPrompt.
func WithTurnTemplate(text string) GenOption {
	return func(g *genConfig) { g.turn.templateText = text }
}

// WithTurnTemplateName renders ChatTurn's prompt with the file's tokenizer.chat_template.NAME
// (ErrNotFound when it has none). ChatTurn, ChatTurnMessage and ChatTurnPrompt only.
func WithTurnTemplateName(name string) GenOption {
	return func(g *genConfig) { g.turn.templateName = name }
}

// WithTurnFixedTime pins the template's strftime_now clock (rendered as UTC). ChatTurn,
// ChatTurnMessage and ChatTurnPrompt only.
func WithTurnFixedTime(t time.Time) GenOption {
	return func(g *genConfig) { g.turn.fixedTime = &t }
}

// WithTurnMmproj gives ChatTurn the model's projector: with a vision projector the request's
// messages may hold images (TurnMessage.Images, or image_url parts in RawJSON; data: URLs only),
// with an audio projector audio clips (TurnMessage.Audio, or input_audio parts with WAV data),
// which the turn places where the template puts their message's text (zf_turn_params.mmproj).
// Without it (or with the other kind) such a part is refused with ErrInvalidArgument naming it. The projector must
// stay open until the call returns. ChatTurn, ChatTurnMessage and ChatTurnPrompt only.
func WithTurnMmproj(p *Mmproj) GenOption {
	return func(g *genConfig) { g.turn.mmproj = p }
}

type turnConfig struct {
	templateName, templateText string
	fixedTime                  *time.Time
	mmproj                     *Mmproj
}

// ChatTurn runs one assistant turn on the session (zf_chat_turn_begin, then zf_chat_turn_next
// per event) as a range-over-func iterator of its events; the last is TurnDone with the Result.
// The request's messages are rendered with the chat template (the model's, or
// WithTurnTemplate), what the session already holds of the prompt is kept, and the output is
// constrained as the request says (tool_choice, response_format) or by a constraint option
// (WithRegex, ...; not WithConstraintTrigger, WithNoSpecial or WithNoParseSpecial). Sampling
// and limits come from opts as for Generate.
//
// As with Stream, the loop body runs outside any C call and must not use this Session; breaking
// out stops the turn (the session keeps what was generated, so a next turn that repeats it
// reuses it). Cancelling ctx stops it at the next token: the partial turn's TurnDone event
// (StopCancelled) comes, then an error matching ErrCancelled and ctx's error. An error (a bad request is ErrInvalidArgument with the library's message naming
// the field) is yielded once, last, with a zero event.
func (s *Session) ChatTurn(ctx context.Context, req TurnRequest, opts ...GenOption) iter.Seq2[TurnEvent, error] {
	return func(yield func(TurnEvent, error) bool) {
		stopped := false
		_, err := s.pullTurn(ctx, &req, opts, func(ev TurnEvent) bool {
			stopped = !yield(ev, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(TurnEvent{ToolIndex: -1}, err)
		}
	}
}

// ChatTurnMessage runs a whole assistant turn (zf_chat_turn) and returns its message, finish
// reason and usage; see ChatTurn for the request and options. Cancelling ctx stops the turn: the
// partial result comes back with an error matching ErrCancelled and ctx's error.
func (s *Session) ChatTurnMessage(ctx context.Context, req TurnRequest, opts ...GenOption) (*TurnResult, error) {
	return s.turn(ctx, &req, opts, func(h *sessionHandle, p *cTurnParams) (res *TurnResult, panicked any, err error) {
		var turn uintptr
		err = call("chat turn", func() int32 { return lib.turnRun(h.ptr, p, 0, 0, &turn) })
		if turn != 0 {
			// After the turn is done, zf_chat_turn_next gives its DONE event again.
			ev := cTurnEvent{structSize: uint32(unsafe.Sizeof(cTurnEvent{}))}
			e := call("chat turn", func() int32 { return lib.turnNext(turn, &ev) })
			if e == nil && TurnEventKind(ev.kind) == TurnDone {
				res, e = doneResult(turn, &ev)
			}
			if err == nil {
				err = e
			}
			lib.turnFree(turn)
		}
		return res, nil, err
	})
}

// ChatTurnPrompt returns the prompt a ChatTurn with req and opts would evaluate
// (zf_chat_turn_prompt): the messages, tools and documents rendered with the template exactly as
// the turn renders them, the generation prompt added (a named ToolChoice shows only that tool).
// Nothing is evaluated. The template options (WithTurnTemplate, WithTurnTemplateName,
// WithTurnFixedTime) apply; the generation options are only checked. For counting a request's
// tokens: Tokenize(prompt, AddSpecial|ParseSpecial). Errors as ChatTurn's (a bad
// request is ErrInvalidArgument with the library's message naming the field). Safe for
// concurrent use.
func (m *Model) ChatTurnPrompt(req TurnRequest, opts ...GenOption) (string, error) {
	body, err := req.JSON()
	if err != nil {
		return "", err
	}
	var out string
	err = m.use(func(ptr uintptr) (err error) {
		p, keep := turnParams(body, opts)
		out, err = fetchString("chat turn prompt", func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.turnPrompt(ptr, &p, buf, cap, needed)
		})
		runtime.KeepAlive(keep)
		runtime.KeepAlive(&p)
		return err
	})
	return out, err
}

// turn runs one turn on the session: it checks ctx, marshals req and holds the session, then
// runs start (which runs the turn with p, watched by ctx) and settles the session (finishTurn).
func (s *Session) turn(ctx context.Context, req *TurnRequest, opts []GenOption,
	start func(h *sessionHandle, p *cTurnParams) (res *TurnResult, panicked any, err error)) (*TurnResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, cancelled(context.Cause(ctx))
	}
	body, err := req.JSON()
	if err != nil {
		return nil, err
	}
	h, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s) // the cleanup must not close the session mid-turn

	p, keep := turnParams(body, opts)
	// The request is read when the turn begins; the generate options are kept for the whole
	// turn anyway (cheap, and safe however the library holds them).
	defer runtime.KeepAlive(keep)
	defer runtime.KeepAlive(&p)
	stopWatch := h.watch(ctx)
	res, panicked, err := start(h, &p)
	sent := h.unwatch(stopWatch)
	return res, s.finishTurn(ctx, h, res, sent, panicked, err)
}

// pullTurn runs a turn through the pull-style calls, passing each event to fn (false stops)
// outside any C call. A panic in fn stops and frees the turn, then propagates.
func (s *Session) pullTurn(ctx context.Context, req *TurnRequest, opts []GenOption, fn func(TurnEvent) bool) (*TurnResult, error) {
	return s.turn(ctx, req, opts, func(h *sessionHandle, p *cTurnParams) (res *TurnResult, panicked any, err error) {
		var turn uintptr
		if err = call("chat turn", func() int32 { return lib.turnBegin(h.ptr, p, &turn) }); err != nil {
			return nil, nil, err
		}
		// zf_chat_turn_free stops the turn if still running; the session keeps what was generated.
		stopped, panicked := pullLoop(func() bool {
			for {
				ev := cTurnEvent{structSize: uint32(unsafe.Sizeof(cTurnEvent{}))}
				if err = call("chat turn", func() int32 { return lib.turnNext(turn, &ev) }); err != nil {
					return false
				}
				// Copy everything out now: the event's pointers are valid until the next call.
				e := copyEvent(&ev)
				if e.Kind == TurnDone {
					if res, err = doneResult(turn, &ev); err != nil {
						return false
					}
					e.Result = res
				}
				if !fn(e) {
					return true
				}
				if e.Kind == TurnDone {
					return false
				}
			}
		}, func() { lib.turnFree(turn) })
		if stopped && res == nil {
			res = &TurnResult{StopReason: StopCallback} // stopped by the consumer before the end
		}
		return res, panicked, err
	})
}

// turnParams builds zf_turn_params for the request text and options; keep holds the Go memory
// its pointers reach (KeepAlive it until the C call that reads them returns).
func turnParams(body string, opts []GenOption) (p cTurnParams, keep any) {
	var g genConfig
	for _, o := range opts {
		o(&g)
	}
	gp, genKeep := genParams(opts)
	lib.turnInit(&p, unsafe.Sizeof(p))
	var strs cStrings
	p.requestJSON = strs.required(body)
	p.templateName = strs.optional(g.turn.templateName)
	p.templateText = strs.optional(g.turn.templateText)
	p.generate = &gp
	if g.turn.fixedTime != nil {
		p.flags |= 0x2 // ZF_CHAT_FIXED_TIME
		p.timeUnix = g.turn.fixedTime.Unix()
	}
	if mm := g.turn.mmproj; mm != nil && mm.h != nil && !mm.h.closed {
		p.mmproj = mm.h.ptr
	}
	return p, [3]any{strs, genKeep, g.turn.mmproj}
}

// copyEvent copies a C event into Go memory (all but Result).
func copyEvent(ev *cTurnEvent) TurnEvent {
	e := TurnEvent{Kind: TurnEventKind(ev.kind), ToolIndex: int(ev.toolIndex)}
	if ev.text != nil && ev.textLen > 0 {
		e.Text = string(unsafe.Slice(ev.text, ev.textLen))
	}
	e.ToolID, e.ToolName = goString(ev.toolID), goString(ev.toolName)
	if ev.logprobs != nil && ev.logprobStride > 0 && ev.nLogprobs >= ev.logprobStride {
		all := make([]TokenLogprob, ev.nLogprobs)
		copy(all, unsafe.Slice(ev.logprobs, ev.nLogprobs))
		stride := int(ev.logprobStride)
		e.Logprobs = make([]TokenLogprobs, 0, len(all)/stride)
		for i := 0; i+stride <= len(all); i += stride {
			e.Logprobs = append(e.Logprobs, TokenLogprobs{TokenLogprob: all[i], Top: all[i+1 : i+stride : i+stride]})
		}
	}
	return e
}

// doneResult reads a DONE event's counts and the turn's message (zf_chat_turn_message).
func doneResult(turn uintptr, ev *cTurnEvent) (*TurnResult, error) {
	text, err := fetchString("chat turn message", func(buf *byte, cap uintptr, needed *uintptr) int32 {
		return lib.turnMessage(turn, buf, cap, needed)
	})
	if err != nil {
		return nil, err
	}
	res := &TurnResult{
		FinishReason: FinishReason(ev.finishReason), StopReason: StopReason(ev.stopReason),
		Usage: TurnUsage{
			PromptTokens: int(ev.nPrompt), CachedTokens: int(ev.nCached), CompletionTokens: int(ev.nGenerated),
			DraftedTokens: int(ev.nDrafted), AcceptedTokens: int(ev.nAccepted),
			PromptTime: msDuration(ev.promptMs), DecodeTime: msDuration(ev.decodeMs),
		},
	}
	if err := json.Unmarshal([]byte(text), &res.Message); err != nil {
		return nil, fmt.Errorf("zerfoo: chat turn: the library's message is not the expected JSON: %w", err)
	}
	res.Message.JSON = text
	return res, nil
}

// finishTurn records the turn as the session's last result and maps cancellation to the
// error Generate gives (with h.busy held).
func (s *Session) finishTurn(ctx context.Context, h *sessionHandle, res *TurnResult, sent bool, panicked any, err error) error {
	var last Result
	if res != nil {
		u := res.Usage
		last = Result{StopReason: res.StopReason, NPrompt: u.PromptTokens - u.CachedTokens, NGenerated: u.CompletionTokens,
			PromptTime: u.PromptTime, DecodeTime: u.DecodeTime, NDrafted: u.DraftedTokens, NAccepted: u.AcceptedTokens}
	}
	gotCancel := errors.Is(err, ErrCancelled) || (err == nil && res != nil && res.StopReason == StopCancelled)
	if sent && !gotCancel {
		// The cancel arrived as the turn was ending and would stop the next call at once; only
		// a reset clears it (as for Generate).
		lib.sessionReset(h.ptr)
	}
	if gotCancel {
		last.StopReason = StopCancelled
		if res != nil {
			res.StopReason = StopCancelled
		}
	}
	s.last = last
	if panicked != nil {
		panic(panicked)
	}
	if gotCancel {
		return cancelled(context.Cause(ctx))
	}
	return err
}
