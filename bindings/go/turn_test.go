package zerfoo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Chat turns (zf_chat_turn_*) on SmolLM2 with Qwen2.5's template (Hermes <tool_call> format).

var turnTools = []Tool{
	FunctionTool("get_weather", "Get the weather forecast for a city",
		`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`),
	FunctionTool("search", "Search the web",
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
}

// thinkTemplate is a small ChatML template that renders reasoning_content inside <think>...</think>.
const thinkTemplate = "{%- for message in messages %}<|im_start|>{{ message.role }}\n" +
	"{% if message.reasoning_content %}<think>{{ message.reasoning_content }}</think>{% endif %}" +
	"{{ message.content }}<|im_end|>\n{% endfor %}" +
	"{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// badTurnRequests are requests every turn entry point rejects with ErrInvalidArgument, want
// being in the library's message.
var badTurnRequests = []struct {
	name string
	req  TurnRequest
	want string
}{
	{"malformed JSON", TurnRequest{RawJSON: `{"messages": [`}, ""},
	{"messages of the wrong type", TurnRequest{RawJSON: `{"messages": 3}`}, "messages"},
	{"tool_choice naming no tool", TurnRequest{Messages: []TurnMessage{UserMessage("hi")}, Tools: turnTools,
		ToolChoice: ToolChoiceFunction("no_such_tool")}, "no_such_tool"},
}

// invalidArgument returns err's library error when err is ErrInvalidArgument with a message
// containing want; nil otherwise.
func invalidArgument(err error, want string) *Error {
	var e *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Message == "" || !strings.Contains(e.Message, want) {
		return nil
	}
	return e
}

func needConstraints(t *testing.T, m *Model) {
	t.Helper()
	if err := m.CheckConstraint(ConstraintRegex, "[0-9]+"); errors.Is(err, ErrUnsupported) {
		t.Skipf("libzerfoo was built without constraints: %v", err)
	}
}

func turnSession(t *testing.T, m *Model) *Session {
	t.Helper()
	s, err := m.NewSession(WithContextSize(1024), WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func hermesOpts(t *testing.T, extra ...GenOption) []GenOption {
	return append([]GenOption{WithTemperature(0), WithMaxTokens(120),
		WithTurnTemplate(chatTemplateFile(t, "Qwen-Qwen2.5-7B-Instruct"))}, extra...)
}

// runTurn streams a turn, wants it to end with TurnDone, and checks that the events
// concatenate to the final message.
func runTurn(t *testing.T, s *Session, req TurnRequest, opts ...GenOption) ([]TurnEvent, *TurnResult) {
	t.Helper()
	var events []TurnEvent
	for ev, err := range s.ChatTurn(context.Background(), req, opts...) {
		if err != nil {
			t.Fatalf("ChatTurn after %d events: %v", len(events), err)
		}
		events = append(events, ev)
	}
	if len(events) == 0 || events[len(events)-1].Kind != TurnDone || events[len(events)-1].Result == nil {
		t.Fatalf("turn did not end with a done event: %+v", events)
	}
	res := events[len(events)-1].Result
	t.Logf("turn: finish %v, stop %v, usage %+v, message %s", res.FinishReason, res.StopReason, res.Usage, res.Message.JSON)
	checkEventsMakeMessage(t, events, &res.Message)
	return events, res
}

// checkEventsMakeMessage: content, reasoning and calls concatenated from the events are the message's.
func checkEventsMakeMessage(t *testing.T, events []TurnEvent, msg *AssistantMessage) {
	t.Helper()
	var content, reasoning strings.Builder
	var calls []ToolCall
	for i, ev := range events {
		switch ev.Kind {
		case TurnContent:
			content.WriteString(ev.Text)
		case TurnReasoning:
			reasoning.WriteString(ev.Text)
		case TurnToolCall:
			if ev.ToolIndex != len(calls) || ev.ToolID == "" || ev.ToolName == "" {
				t.Fatalf("event %d: call %d (%q, %q) after %d calls", i, ev.ToolIndex, ev.ToolID, ev.ToolName, len(calls))
			}
			calls = append(calls, ToolCall{ID: ev.ToolID, Type: "function", Function: ToolCallFunction{Name: ev.ToolName}})
		case TurnToolArgs:
			if ev.ToolIndex < 0 || ev.ToolIndex >= len(calls) {
				t.Fatalf("event %d: arguments of call %d before its start", i, ev.ToolIndex)
			}
			calls[ev.ToolIndex].Function.Arguments += ev.Text
		case TurnLogprobs:
		case TurnDone:
			if i != len(events)-1 {
				t.Fatalf("done event %d of %d", i, len(events))
			}
		default:
			t.Fatalf("event %d: unknown kind %v", i, ev.Kind)
		}
		if (ev.Kind == TurnContent || ev.Kind == TurnReasoning || ev.Kind == TurnToolArgs) && ev.Text == "" {
			t.Fatalf("event %d (%v) without text", i, ev.Kind)
		}
	}
	wantContent := ""
	if msg.Content != nil {
		wantContent = *msg.Content
	}
	if content.String() != wantContent || reasoning.String() != msg.ReasoningContent {
		t.Fatalf("events: content %q reasoning %q; message: content %q reasoning %q",
			content.String(), reasoning.String(), wantContent, msg.ReasoningContent)
	}
	if len(calls) != len(msg.ToolCalls) {
		t.Fatalf("events: %d calls %+v; message: %+v", len(calls), calls, msg.ToolCalls)
	}
	for i, c := range calls {
		if c != msg.ToolCalls[i] {
			t.Fatalf("call %d: events %+v, message %+v", i, c, msg.ToolCalls[i])
		}
	}
}

// checkCallArgs: each call is to an offered tool and its arguments are a JSON object with
// that tool's required keys.
func checkCallArgs(t *testing.T, calls []ToolCall) {
	t.Helper()
	for _, c := range calls {
		var tool *Tool
		for i := range turnTools {
			if turnTools[i].Function.Name == c.Function.Name {
				tool = &turnTools[i]
			}
		}
		if tool == nil {
			t.Fatalf("call of an unknown function: %+v", c)
		}
		var schema struct{ Required []string }
		if err := json.Unmarshal(tool.Function.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
			t.Fatalf("call %s: arguments %q: %v", c.Function.Name, c.Function.Arguments, err)
		}
		for _, k := range schema.Required {
			if _, ok := args[k]; !ok {
				t.Fatalf("call %s: arguments %s lack %q", c.Function.Name, c.Function.Arguments, k)
			}
		}
	}
}

func TestTurnRequestJSON(t *testing.T) {
	no := false
	r := TurnRequest{
		Messages: []TurnMessage{SystemMessage("Be brief."), UserMessage("Hi"),
			{Role: "assistant", NoContent: true, ToolCalls: []ToolCall{{ID: "call_1", Type: "function",
				Function: ToolCallFunction{Name: "search", Arguments: `{"q":"x"}`}}}},
			ToolResultMessage("call_1", "search", "found")},
		Tools:              turnTools[1:],
		ToolChoice:         ToolChoiceFunction("search"),
		ParallelToolCalls:  &no,
		ResponseFormat:     JSONSchemaFormat(`{"type":"object"}`),
		ReasoningFormat:    ReasoningNone,
		ChatTemplateKwargs: map[string]any{"enable_thinking": false},
		Documents:          json.RawMessage(`[{"text":"d"}]`),
	}
	got, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}]},
	  {"role":"tool","content":"found","tool_call_id":"call_1","name":"search"}],
	  "tools":[{"type":"function","function":{"name":"search","description":"Search the web","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}],
	  "tool_choice":{"type":"function","function":{"name":"search"}},"parallel_tool_calls":false,
	  "response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},
	  "reasoning_format":"none","chat_template_kwargs":{"enable_thinking":false},"documents":[{"text":"d"}]}`)
	// Defaults are left out; the choices are strings.
	for choice, want := range map[ToolChoice]string{{}: `{"messages":[{"role":"user","content":""}]}`,
		ToolChoiceAuto:     `{"messages":[{"role":"user","content":""}],"tool_choice":"auto"}`,
		ToolChoiceNone:     `{"messages":[{"role":"user","content":""}],"tool_choice":"none"}`,
		ToolChoiceRequired: `{"messages":[{"role":"user","content":""}],"tool_choice":"required"}`} {
		if got, err := (&TurnRequest{Messages: []TurnMessage{UserMessage("")}, ToolChoice: choice}).JSON(); err != nil || got != want {
			t.Errorf("choice %+v: %s, %v; want %s", choice, got, err, want)
		}
	}
	// The raw form is sent as is; an assistant message round-trips into the next request.
	if got, _ := (&TurnRequest{RawJSON: "{oops", Messages: []TurnMessage{UserMessage("x")}}).JSON(); got != "{oops" {
		t.Fatalf("raw request: %s", got)
	}
	content := "4"
	back := (&AssistantMessage{Role: "assistant", Content: &content, ReasoningContent: "2+2"}).TurnMessage()
	if !reflect.DeepEqual(back, TurnMessage{Role: "assistant", Content: "4", ReasoningContent: "2+2"}) {
		t.Fatalf("TurnMessage() = %+v", back)
	}
	if (&AssistantMessage{}).TurnMessage().NoContent != true {
		t.Fatal("a message without content must stay null")
	}
}

func TestChatTurnRequiredTools(t *testing.T) {
	m := sharedModel(t)
	needConstraints(t, m)
	req := TurnRequest{Messages: []TurnMessage{UserMessage("What is the weather in Paris for the next 3 days?")},
		Tools: turnTools, ToolChoice: ToolChoiceRequired}
	_, res := runTurn(t, turnSession(t, m), req, hermesOpts(t)...)
	if res.FinishReason != FinishToolCalls || len(res.Message.ToolCalls) == 0 || res.Message.Content != nil {
		t.Fatalf("tool_choice required: %+v", res)
	}
	checkCallArgs(t, res.Message.ToolCalls)
	// The whole-turn call gives the same greedy calls on a fresh session (ids aside).
	whole, err := turnSession(t, m).ChatTurnMessage(context.Background(), req, hermesOpts(t)...)
	if err != nil || whole.FinishReason != FinishToolCalls || whole.Message.Content != nil ||
		!slices.Equal(callFunctions(whole.Message.ToolCalls), callFunctions(res.Message.ToolCalls)) ||
		whole.Usage.CompletionTokens != res.Usage.CompletionTokens || whole.Usage.PromptTokens != res.Usage.PromptTokens {
		t.Fatalf("ChatTurnMessage = %+v, %v; streamed %+v", whole, err, res)
	}
}

func callFunctions(calls []ToolCall) []ToolCallFunction {
	var f []ToolCallFunction
	for _, c := range calls {
		f = append(f, c.Function)
	}
	return f
}

func TestChatTurnNamedTool(t *testing.T) {
	m := sharedModel(t)
	needConstraints(t, m)
	no := false
	req := TurnRequest{Messages: []TurnMessage{UserMessage("What is the weather in Paris?")},
		Tools: turnTools, ToolChoice: ToolChoiceFunction("search"), ParallelToolCalls: &no}
	_, res := runTurn(t, turnSession(t, m), req, hermesOpts(t)...)
	if res.FinishReason != FinishToolCalls || len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Function.Name != "search" {
		t.Fatalf("named tool_choice: %+v", res.Message)
	}
	checkCallArgs(t, res.Message.ToolCalls)
}

func TestChatTurnAuto(t *testing.T) {
	m := sharedModel(t)
	req := TurnRequest{Messages: []TurnMessage{UserMessage("What is 2 plus 2?")}, Tools: turnTools, ToolChoice: ToolChoiceAuto}
	_, res := runTurn(t, turnSession(t, m), req, hermesOpts(t)...)
	switch {
	case len(res.Message.ToolCalls) > 0:
		if res.FinishReason != FinishToolCalls {
			t.Fatalf("calls with finish reason %v", res.FinishReason)
		}
		checkCallArgs(t, res.Message.ToolCalls)
	case res.Message.Content == nil || *res.Message.Content == "":
		t.Fatalf("neither content nor calls: %+v", res)
	case res.FinishReason == FinishToolCalls:
		t.Fatalf("finish reason tool_calls without calls: %+v", res)
	}
}

func TestChatTurnReasoning(t *testing.T) {
	m := sharedModel(t)
	needConstraints(t, m)
	const pattern = `<think>[a-z ]{5,30}</think>[A-Za-z ]{5,30}`
	s := turnSession(t, m)
	events, res := runTurn(t, s, TurnRequest{Messages: []TurnMessage{UserMessage("Is the sky blue? Think first.")}},
		WithTemperature(0), WithMaxTokens(80), WithTurnTemplate(thinkTemplate), WithRegex(pattern))
	kinds := map[TurnEventKind]int{}
	for _, ev := range events {
		kinds[ev.Kind]++
	}
	msg := res.Message
	if kinds[TurnReasoning] == 0 || kinds[TurnContent] == 0 || res.StopReason != StopEOS || res.FinishReason != FinishStop ||
		msg.ReasoningContent == "" || msg.Content == nil || *msg.Content == "" {
		t.Fatalf("reasoning turn: events %v, result %+v", kinds, res)
	}
	// What was generated matches the pattern with the reasoning inside the markers.
	generated := "<think>" + msg.ReasoningContent + "</think>" + *msg.Content
	if !regexp.MustCompile(`^[a-z ]{0,30}$`).MatchString(msg.ReasoningContent) || strings.Contains(*msg.Content, "think>") {
		t.Fatalf("message %s (as text: %q) does not split %s", msg.JSON, generated, pattern)
	}
	// reasoning_format "none" keeps the markers in the content.
	_, res = runTurn(t, s, TurnRequest{Messages: []TurnMessage{UserMessage("Is the sky blue? Think first.")}, ReasoningFormat: ReasoningNone},
		WithTemperature(0), WithMaxTokens(80), WithTurnTemplate(thinkTemplate), WithRegex(pattern))
	if res.Message.ReasoningContent != "" || res.Message.Content == nil || !regexp.MustCompile("^"+pattern+"$").MatchString(*res.Message.Content) {
		t.Fatalf("reasoning_format none: %s", res.Message.JSON)
	}
}

func TestChatTurnResponseFormat(t *testing.T) {
	m := sharedModel(t)
	needConstraints(t, m)
	const schema = `{"type":"object","properties":{"name":{"type":"string","maxLength":24},"age":{"type":"integer"}},
	  "required":["name","age"],"additionalProperties":false}`
	_, res := runTurn(t, turnSession(t, m), TurnRequest{
		Messages:       []TurnMessage{UserMessage("Describe Alice, a 30 year old administrator, as JSON.")},
		ResponseFormat: JSONSchemaFormat(schema)}, WithTemperature(0), WithMaxTokens(80))
	if res.FinishReason != FinishStop || res.StopReason != StopEOS || res.Message.Content == nil {
		t.Fatalf("json_schema turn: %+v", res)
	}
	var person struct {
		Name *string `json:"name"`
		Age  *int    `json:"age"`
	}
	if err := json.Unmarshal([]byte(*res.Message.Content), &person); err != nil || person.Name == nil || person.Age == nil {
		t.Fatalf("content %q: %+v, %v", *res.Message.Content, person, err)
	}
}

func TestChatTurnErrors(t *testing.T) {
	m := sharedModel(t)
	s := turnSession(t, m)
	for _, c := range badTurnRequests {
		_, err := s.ChatTurnMessage(context.Background(), c.req, WithMaxTokens(4))
		if invalidArgument(err, c.want) == nil {
			t.Fatalf("%s: ChatTurnMessage error %v", c.name, err)
		}
		n := 0
		for ev, err2 := range s.ChatTurn(context.Background(), c.req, WithMaxTokens(4)) {
			n++
			if ev.Kind != 0 || err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("%s: ChatTurn yielded %+v, %v; want only %v", c.name, ev, err2, err)
			}
		}
		if n != 1 {
			t.Fatalf("%s: ChatTurn yielded %d values", c.name, n)
		}
		t.Logf("%s: %v", c.name, err)
	}
	// The session is still usable.
	if res, err := s.ChatTurnMessage(context.Background(), TurnRequest{Messages: []TurnMessage{UserMessage("hi")}},
		WithTemperature(0), WithMaxTokens(4)); err != nil || res.Usage.CompletionTokens == 0 {
		t.Fatalf("after errors: %+v, %v", res, err)
	}
}

// TestChatTurnStopAndReuse: a turn stopped early (the loop breaks, or the context is cancelled)
// leaves the session usable, and a next turn that repeats the conversation and the partial
// answer reuses the session's tokens.
func TestChatTurnStopAndReuse(t *testing.T) {
	// Without the prefix cache, cached tokens can only come from the session itself.
	m, err := Open(modelPath(t), WithDevice(DeviceCPU), WithPrefixCacheMiB(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	question := UserMessage("Write a long story about a dragon who learns to fly.")
	firstPrompt, err := m.ApplyChatTemplate([]ChatMessage{{Role: "user", Content: question.Content}}, ChatOptions{AddAssistant: true})
	if err != nil {
		t.Fatal(err)
	}
	firstTokens, err := m.Tokenize(firstPrompt, AddSpecial|ParseSpecial)
	if err != nil {
		t.Fatal(err)
	}
	opts := []GenOption{WithTemperature(0), WithMaxTokens(200), WithIgnoreEOS()}

	for _, how := range []string{"break", "cancel"} {
		s := turnSession(t, m)
		ctx, cancel := context.WithCancel(context.Background())
		var answer strings.Builder
		var gotErr error
		events := 0
		for ev, err := range s.ChatTurn(ctx, TurnRequest{Messages: []TurnMessage{question}}, opts...) {
			if err != nil {
				gotErr = err
				break
			}
			if ev.Kind == TurnDone {
				// A cancelled turn ends with its partial result (then the error); nothing else ends it.
				if how == "cancel" && ev.Result.StopReason == StopCancelled && events >= 3 {
					continue
				}
				t.Fatalf("%s: the turn ran to its end: %+v", how, ev.Result)
			}
			answer.WriteString(ev.Text)
			if events++; events == 3 {
				if how == "break" {
					break
				}
				cancel()
			}
		}
		cancel()
		switch how {
		case "break":
			if gotErr != nil || events != 3 || s.LastResult().StopReason != StopCallback {
				t.Fatalf("break: %v after %d events, last %+v", gotErr, events, s.LastResult())
			}
		case "cancel":
			if !errors.Is(gotErr, ErrCancelled) || !errors.Is(gotErr, context.Canceled) || events > 3+10 ||
				s.LastResult().StopReason != StopCancelled {
				t.Fatalf("cancel: %v after %d events, last %+v", gotErr, events, s.LastResult())
			}
			if _, err := s.ChatTurnMessage(ctx, TurnRequest{Messages: []TurnMessage{question}}); !errors.Is(err, ErrCancelled) {
				t.Fatalf("done context: want ErrCancelled, got %v", err)
			}
		}
		// The next turn repeats the conversation with the partial answer.
		next := TurnRequest{Messages: []TurnMessage{question, {Role: "assistant", Content: answer.String()}, UserMessage("Go on.")}}
		res, err := s.ChatTurnMessage(context.Background(), next, WithTemperature(0), WithMaxTokens(8))
		if err != nil {
			t.Fatalf("%s: next turn: %v", how, err)
		}
		t.Logf("%s after %d events (%q): next turn %+v; the first prompt had %d tokens", how, events, answer.String(), res.Usage, len(firstTokens))
		if res.Usage.CachedTokens <= len(firstTokens) || res.Usage.CachedTokens >= res.Usage.PromptTokens || res.Usage.CompletionTokens == 0 {
			t.Fatalf("%s: the next turn reused %d of %d prompt tokens (the first prompt: %d)", how,
				res.Usage.CachedTokens, res.Usage.PromptTokens, len(firstTokens))
		}
	}
}

// TestChatTurnPanicInBody: a panic in the loop body propagates; the turn is freed and the
// session stays usable.
func TestChatTurnPanicInBody(t *testing.T) {
	m := sharedModel(t)
	s := turnSession(t, m)
	req := TurnRequest{Messages: []TurnMessage{UserMessage("Say hello.")}}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want boom", r)
			}
		}()
		for range s.ChatTurn(context.Background(), req, WithTemperature(0), WithMaxTokens(16)) {
			panic("boom")
		}
	}()
	if res, err := s.ChatTurnMessage(context.Background(), req, WithTemperature(0), WithMaxTokens(4)); err != nil || res.Usage.CachedTokens == 0 {
		t.Fatalf("after panic: %+v, %v", res, err)
	}
}

func TestChatTurnLogprobs(t *testing.T) {
	m := sharedModel(t)
	needConstraints(t, m)
	req := TurnRequest{Messages: []TurnMessage{UserMessage("What is the weather in Oslo?")}, Tools: turnTools, ToolChoice: ToolChoiceRequired}
	events, res := runTurn(t, turnSession(t, m), req, hermesOpts(t, WithLogprobs(2))...)
	n := 0
	for _, ev := range events {
		for _, lp := range ev.Logprobs {
			if len(lp.Top) != 2 || lp.Logprob > 0 {
				t.Fatalf("%v event: logprobs %+v", ev.Kind, lp)
			}
			n++
		}
	}
	t.Logf("%d tokens with logprobs, %d generated", n, res.Usage.CompletionTokens)
	if n == 0 || n > res.Usage.CompletionTokens {
		t.Fatalf("%d tokens with logprobs, %d generated", n, res.Usage.CompletionTokens)
	}
}

// The README's chat-turn example (compiled, not run).
func ExampleSession_ChatTurn() {
	m, err := Open("smollm2-135m-instruct-q4_1.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(WithContextSize(2048))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	weather := FunctionTool("get_weather", "Weather forecast for a city",
		`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	req := TurnRequest{
		Messages:   []TurnMessage{UserMessage("What is the weather in Paris?")},
		Tools:      []Tool{weather},
		ToolChoice: ToolChoiceAuto,
	}
	for ev, err := range s.ChatTurn(ctx, req, WithTemperature(0), WithMaxTokens(256)) {
		if err != nil {
			log.Fatal(err) // a bad request is ErrInvalidArgument naming the field
		}
		switch ev.Kind {
		case TurnContent, TurnReasoning:
			fmt.Print(ev.Text)
		case TurnToolCall:
			fmt.Printf("\ncall %d: %s(", ev.ToolIndex, ev.ToolName)
		case TurnToolArgs:
			fmt.Print(ev.Text) // the arguments' JSON text, in fragments
		case TurnDone:
			r := ev.Result
			fmt.Printf("\n%s, %d prompt tokens (%d reused)\n", r.FinishReason, r.Usage.PromptTokens, r.Usage.CachedTokens)
			req.Messages = append(req.Messages, r.Message.TurnMessage())
		}
	}
}
