package zerfoo

import (
	"encoding/json"
	"fmt"
	"runtime"
	"time"
)

// ChatMessage is one chat turn with every field chat templates read (zf_chat_message_v2).
// Empty optional strings leave the field out of the message the template sees.
type ChatMessage struct {
	Role             string // "system", "user", "assistant", "tool", ...
	Content          string
	NoContent        bool   // content is None (e.g. an assistant turn with only tool calls)
	ReasoningContent string // the assistant's thinking
	ToolCallsJSON    string // JSON array: [{"type":"function","id":"call_1","function":{"name":"f","arguments":{...}}}]
	ToolCallID       string // on a tool result
	Name             string // the tool's name on a tool result
	ExtraJSON        string // JSON object whose keys are added to the message
}

// ChatOptions select the template and the variables besides messages (zf_chat_params).
type ChatOptions struct {
	AddAssistant  bool       // add_generation_prompt
	TemplateName  string     // use the file's tokenizer.chat_template.NAME
	Template      string     // the caller's own Jinja template (overrides the file's)
	ToolsJSON     string     // `tools`: a JSON array of tool definitions
	DocumentsJSON string     // `documents`: a JSON array
	ExtraJSON     string     // extra variables as a JSON object, e.g. {"enable_thinking":false}
	FixedTime     *time.Time // strftime_now's clock (rendered as UTC); nil = the local time now
}

// ApplyChatTemplate renders msgs with the model's chat template (or the one opts names) exactly
// as Python's jinja2 renders it in transformers' apply_chat_template. A template failure is
// ErrTemplate with the template's line and column in the message.
func (m *Model) ApplyChatTemplate(msgs []ChatMessage, opts ChatOptions) (string, error) {
	var out string
	err := m.use(func(ptr uintptr) (err error) {
		var keep cStrings
		opt, req := keep.optional, keep.required
		cmsgs := make([]cChatMessageV2, len(msgs)+1)
		for i, msg := range msgs {
			c := cChatMessageV2{structSize: 64, role: req(msg.Role), reasoningContent: opt(msg.ReasoningContent),
				toolCallsJSON: opt(msg.ToolCallsJSON), toolCallID: opt(msg.ToolCallID), name: opt(msg.Name),
				extraJSON: opt(msg.ExtraJSON)}
			if !msg.NoContent {
				c.content = req(msg.Content)
			}
			cmsgs[i] = c
		}
		p := opts.cParams(opt)
		out, err = fetchString("chat template", func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.applyTemplate2(ptr, &cmsgs[0], uintptr(len(msgs)), &p, buf, cap, needed)
		})
		runtime.KeepAlive(keep)
		runtime.KeepAlive(cmsgs)
		runtime.KeepAlive(&p)
		return err
	})
	return out, err
}

// cStrings makes NUL-terminated copies of Go strings for one call and keeps them alive until
// runtime.KeepAlive(keep) after it.
type cStrings [][]byte

// required: a C string, "" included.
func (k *cStrings) required(s string) *byte {
	b := cstr(s)
	*k = append(*k, b)
	return &b[0]
}

// optional: a C string, or nil for "".
func (k *cStrings) optional(s string) *byte {
	if s == "" {
		return nil
	}
	return k.required(s)
}

// cParams fills zf_chat_params from opts; opt turns a string into a C string (nil when empty)
// that the caller keeps alive for the call.
func (opts ChatOptions) cParams(opt func(string) *byte) cChatParams {
	p := cChatParams{structSize: 56, templateName: opt(opts.TemplateName), templateText: opt(opts.Template),
		toolsJSON: opt(opts.ToolsJSON), documentsJSON: opt(opts.DocumentsJSON), extraJSON: opt(opts.ExtraJSON)}
	if opts.AddAssistant {
		p.flags |= 0x1
	}
	if opts.FixedTime != nil {
		p.flags |= 0x2
		p.timeUnix = opts.FixedTime.Unix()
	}
	return p
}

// AssistantMessage is an OpenAI assistant message parsed from generated text (ChatParse).
type AssistantMessage struct {
	Role             string     `json:"role"`                        // always "assistant"
	Content          *string    `json:"content"`                     // nil when the turn is only tool calls
	ReasoningContent string     `json:"reasoning_content,omitempty"` // the model's thinking ("" for none)
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	// JSON is the library's message exactly as zf_chat_parse wrote it (ready to send as an
	// OpenAI chat.completion message).
	JSON string `json:"-"`
}

// ToolCall is one function call of an AssistantMessage.
type ToolCall struct {
	ID       string           `json:"id"`   // the model's id where the format has one, else "call_" + 16 hex digits
	Type     string           `json:"type"` // "function"
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction names the called function and its arguments.
type ToolCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object as text, as in the OpenAI API
}

// ChatParse parses what the model generated for one assistant turn (the text after the
// template's generation prompt, without the end-of-turn token) back into an OpenAI assistant
// message: content, reasoning and tool calls, in the format of the chat template that prompted
// it (zf_chat_parse). opts picks the template as in ApplyChatTemplate (TemplateName, Template);
// ToolsJSON lists the offered tools (their parameter types decide how text-valued arguments are
// read) and ExtraJSON holds the variables the prompt was rendered with (e.g.
// {"enable_thinking":true}: whether the generation prompt opened reasoning). Malformed
// ToolsJSON or ExtraJSON is ErrInvalidArgument naming the field; an unknown TemplateName is
// ErrNotFound; text that is not UTF-8 is ErrInvalidUTF8. Safe for concurrent use.
func (m *Model) ChatParse(text string, opts ChatOptions) (*AssistantMessage, error) {
	var out string
	err := m.use(func(ptr uintptr) (err error) {
		var keep cStrings
		t := cstr(text) // may contain NUL: the length is passed
		p := opts.cParams(keep.optional)
		out, err = fetchString("chat parse", func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.chatParse(ptr, &t[0], uintptr(len(text)), &p, buf, cap, needed)
		})
		runtime.KeepAlive(keep)
		runtime.KeepAlive(t)
		runtime.KeepAlive(&p)
		return err
	})
	if err != nil {
		return nil, err
	}
	msg := &AssistantMessage{JSON: out}
	if err := json.Unmarshal([]byte(out), msg); err != nil {
		return nil, fmt.Errorf("zerfoo: chat parse: the library's message is not the expected JSON: %w", err)
	}
	return msg, nil
}

// ToolGrammar is the constraint for tool calls in a chat template's own format (ChatToolGrammar).
type ToolGrammar struct {
	Grammar     string `json:"grammar"`      // Lark: a turn that is only tool calls
	LazyGrammar string `json:"lazy_grammar"` // Lark: the output from Trigger on ("" without a trigger)
	Trigger     string `json:"trigger"`      // the text that opens a call ("" if the format has none)
	Native      bool   `json:"native"`       // the template's own format (else the generic JSON form)
}

// ChatToolGrammar gives the grammar of tool calls in the format of the chat template that
// prompts the model (zf_chat_tool_grammar), each call's arguments valid for its tool's
// parameters: generate with WithConstraint(ConstraintLark, g.Grammar) to require a call
// (tool_choice "required"; offer one tool for a named choice), or with
// WithConstraint(ConstraintLark, g.LazyGrammar) and WithConstraintTrigger(g.Trigger) to let the
// model answer freely but call tools validly. opts.ToolsJSON (required) lists the tools; oneCall
// allows exactly one call (else up to 8). Missing or malformed tools are ErrInvalidArgument.
func (m *Model) ChatToolGrammar(opts ChatOptions, oneCall bool) (*ToolGrammar, error) {
	var out string
	err := m.use(func(ptr uintptr) (err error) {
		var keep cStrings
		p := opts.cParams(keep.optional)
		if oneCall {
			p.flags |= 0x8
		}
		out, err = fetchString("chat tool grammar", func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.chatToolGrammar(ptr, &p, buf, cap, needed)
		})
		runtime.KeepAlive(keep)
		runtime.KeepAlive(&p)
		return err
	})
	if err != nil {
		return nil, err
	}
	g := &ToolGrammar{}
	if err := json.Unmarshal([]byte(out), g); err != nil {
		return nil, fmt.Errorf("zerfoo: chat tool grammar: the library's answer is not the expected JSON: %w", err)
	}
	return g, nil
}
