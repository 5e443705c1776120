package zerfoo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// TurnRequest is one assistant turn's request in OpenAI Chat Completions' shape
// (zf_turn_params.request_json), serialized with encoding/json. Sampling, max tokens, stop
// strings and other output constraints come from the GenOptions passed beside it.
type TurnRequest struct {
	Messages []TurnMessage `json:"messages"`
	Tools    []Tool        `json:"tools,omitempty"`
	// ToolChoice: the zero value leaves the library's default ("auto").
	ToolChoice ToolChoice `json:"tool_choice,omitzero"`
	// ParallelToolCalls: nil leaves the default (true); false reads at most one call.
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    *ResponseFormat `json:"response_format,omitempty"`
	// ReasoningFormat: ReasoningAuto ("", the default) splits reasoning out of the content;
	// ReasoningNone keeps the text as generated as the content.
	ReasoningFormat ReasoningFormat `json:"reasoning_format,omitempty"`
	// ChatTemplateKwargs are extra template variables, e.g. {"enable_thinking": false}.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	// Documents is a JSON array handed to the template as `documents` (RAG templates).
	Documents json.RawMessage `json:"documents,omitempty"`
	// RawJSON, when non-empty, is sent as the request instead of the fields above (for keys this
	// type does not model, or a request that arrived as JSON).
	RawJSON string `json:"-"`
}

// JSON returns the request text the library receives: RawJSON as is, else the fields marshaled.
func (r *TurnRequest) JSON() (string, error) {
	if r.RawJSON != "" {
		return r.RawJSON, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("zerfoo: chat turn: request: %w", err)
	}
	return string(b), nil
}

// TurnMessage is one message of the conversation (OpenAI's message object).
type TurnMessage struct {
	Role    string `json:"role"` // "system", "user", "assistant", "tool"
	Content string `json:"content"`
	// Images (encoded PNG, JPEG, GIF or BMP bytes) go before Content as OpenAI image_url parts
	// with data: URLs; the turn needs the model's projector (WithTurnMmproj).
	Images [][]byte `json:"-"`
	// Audio (WAV files' bytes; EncodeWAV writes samples as one) go after the images as OpenAI
	// input_audio parts; the turn needs the model's audio projector (WithTurnMmproj).
	Audio            [][]byte   `json:"-"`
	NoContent        bool       `json:"-"` // content is null (an assistant turn with only tool calls)
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`   // an assistant turn's calls
	ToolCallID       string     `json:"tool_call_id,omitempty"` // a tool result: the call it answers
	Name             string     `json:"name,omitempty"`         // a tool result: the function's name
}

// MarshalJSON writes content as null when NoContent is set, and as parts (the images, the
// audio clips, then the text) when the message has Images or Audio.
func (m TurnMessage) MarshalJSON() ([]byte, error) {
	type plain TurnMessage // without this method
	if len(m.Images) > 0 || len(m.Audio) > 0 {
		parts := make([]any, 0, len(m.Images)+len(m.Audio)+1)
		for _, img := range m.Images {
			url := "data:" + http.DetectContentType(img) + ";base64," + base64.StdEncoding.EncodeToString(img)
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": url}})
		}
		for _, wav := range m.Audio {
			clip := map[string]string{"data": base64.StdEncoding.EncodeToString(wav), "format": "wav"}
			parts = append(parts, map[string]any{"type": "input_audio", "input_audio": clip})
		}
		if m.Content != "" {
			parts = append(parts, map[string]string{"type": "text", "text": m.Content})
		}
		return json.Marshal(struct {
			plain
			Content []any `json:"content"` // shadows plain.Content
		}{plain: plain(m), Content: parts})
	}
	if !m.NoContent {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		plain
		Content *string `json:"content"` // shadows plain.Content
	}{plain: plain(m)})
}

// UserMessage is a user message with text content.
func UserMessage(text string) TurnMessage { return TurnMessage{Role: "user", Content: text} }

// SystemMessage is a system message with text content.
func SystemMessage(text string) TurnMessage { return TurnMessage{Role: "system", Content: text} }

// ToolResultMessage answers tool call callID (of function name) with content.
func ToolResultMessage(callID, name, content string) TurnMessage {
	return TurnMessage{Role: "tool", Content: content, ToolCallID: callID, Name: name}
}

// TurnMessage turns an assistant message (a turn's result) into a message of the next
// request's conversation.
func (m *AssistantMessage) TurnMessage() TurnMessage {
	t := TurnMessage{Role: "assistant", ReasoningContent: m.ReasoningContent, ToolCalls: m.ToolCalls}
	if m.Content != nil {
		t.Content = *m.Content
	} else {
		t.NoContent = true
	}
	return t
}

// Tool is a function the model may call (OpenAI's tool object).
type Tool struct {
	Type     string       `json:"type"` // "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction describes a callable function.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON schema of the arguments object
}

// FunctionTool is a Tool of type "function"; parameters is the arguments' JSON schema.
func FunctionTool(name, description, parameters string) Tool {
	t := Tool{Type: "function", Function: ToolFunction{Name: name, Description: description}}
	if parameters != "" {
		t.Function.Parameters = json.RawMessage(parameters)
	}
	return t
}

// ToolChoice says whether and which tools the model must call: ToolChoiceAuto, ToolChoiceNone,
// ToolChoiceRequired or ToolChoiceFunction(name). The zero value is the library's default.
type ToolChoice struct {
	mode     string // "auto", "none", "required"; "" with function set: a named function
	function string
}

var (
	ToolChoiceAuto     = ToolChoice{mode: "auto"}     // the model decides (the default)
	ToolChoiceNone     = ToolChoice{mode: "none"}     // tools are shown to the template, no calls are read
	ToolChoiceRequired = ToolChoice{mode: "required"} // the turn is one or more calls
)

// ToolChoiceFunction requires a call of the named function.
func ToolChoiceFunction(name string) ToolChoice { return ToolChoice{function: name} }

// IsZero reports the default choice (omitted from the request).
func (c ToolChoice) IsZero() bool { return c == ToolChoice{} }

// MarshalJSON writes OpenAI's form: a string, or {"type":"function","function":{"name":...}}.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	if c.mode != "" {
		return json.Marshal(c.mode)
	}
	if c.function == "" {
		return []byte(`"auto"`), nil
	}
	named := map[string]any{"type": "function", "function": map[string]string{"name": c.function}}
	return json.Marshal(named)
}

// ReasoningFormat is the request's reasoning_format.
type ReasoningFormat string

const (
	ReasoningAuto ReasoningFormat = ""     // the default ("auto"): reasoning is split out of the content
	ReasoningNone ReasoningFormat = "none" // the text as generated is the content
)

// ResponseFormat constrains the answer's content (OpenAI's response_format); see
// JSONObjectFormat and JSONSchemaFormat.
type ResponseFormat struct {
	Type       string      `json:"type"` // "text", "json_object" or "json_schema"
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a response_format's json_schema member.
type JSONSchema struct {
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema"`
	Strict *bool           `json:"strict,omitempty"`
}

// JSONObjectFormat asks for any JSON object as the content.
func JSONObjectFormat() *ResponseFormat { return &ResponseFormat{Type: "json_object"} }

// JSONSchemaFormat asks for content that is JSON valid for schema.
func JSONSchemaFormat(schema string) *ResponseFormat {
	return &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Schema: json.RawMessage(schema)}}
}
