package zerfoo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// ChatTurnPrompt (zf_chat_turn_prompt) on SmolLM2: the prompt a turn would evaluate.

// TestChatTurnPromptIsTheAppliedTemplate: the turn's prompt is what ApplyChatTemplate renders for
// the same messages and tools with the generation prompt, under the same template and clock; a
// named tool_choice renders only that tool.
func TestChatTurnPromptIsTheAppliedTemplate(t *testing.T) {
	m := sharedModel(t)
	tmpl := chatTemplateFile(t, "Qwen-Qwen2.5-7B-Instruct")
	when := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	req := TurnRequest{
		Messages: []TurnMessage{SystemMessage("Be brief."), UserMessage("Weather in Paris?")},
		Tools:    turnTools,
	}
	applied := func(tools []Tool) string {
		t.Helper()
		toolsJSON, err := json.Marshal(tools)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.ApplyChatTemplate([]ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Weather in Paris?"}},
			ChatOptions{AddAssistant: true, Template: tmpl, ToolsJSON: string(toolsJSON), FixedTime: &when})
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
	got, err := m.ChatTurnPrompt(req, WithTurnTemplate(tmpl), WithTurnFixedTime(when))
	if err != nil {
		t.Fatal(err)
	}
	if want := applied(turnTools); got != want {
		t.Fatalf("ChatTurnPrompt:\n%s\nApplyChatTemplate:\n%s", got, want)
	}
	if !strings.Contains(got, `"get_weather"`) || !strings.Contains(got, `"search"`) || !strings.HasSuffix(got, "<|im_start|>assistant\n") {
		t.Fatalf("prompt without both tools or the generation prompt:\n%s", got)
	}

	req.ToolChoice = ToolChoiceFunction("search")
	named, err := m.ChatTurnPrompt(req, WithTurnTemplate(tmpl), WithTurnFixedTime(when))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(named, "get_weather") || !strings.Contains(named, `"search"`) {
		t.Fatalf("named tool_choice: the prompt shows other tools or not the named one:\n%s", named)
	}
	if want := applied(turnTools[1:]); named != want {
		t.Fatalf("named tool_choice:\n%s\nApplyChatTemplate with only that tool:\n%s", named, want)
	}

	// Without template options: the model's own template, as the model-level apply renders it.
	plain := TurnRequest{Messages: []TurnMessage{UserMessage("Hi there")}}
	own, err := m.ChatTurnPrompt(plain)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := m.ApplyChatTemplate([]ChatMessage{{Role: "user", Content: "Hi there"}}, ChatOptions{AddAssistant: true}); err != nil || own != want {
		t.Fatalf("model template: %q, want %q (%v)", own, want, err)
	}
}

// TestChatTurnPromptCountsTheTurnsTokens: tokenized with special tokens, the prompt is as long
// as the prompt a turn evaluates.
func TestChatTurnPromptCountsTheTurnsTokens(t *testing.T) {
	m := sharedModel(t)
	req := TurnRequest{Messages: []TurnMessage{SystemMessage("Be brief."), UserMessage("Name a color.")}}
	prompt, err := m.ChatTurnPrompt(req)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := m.Tokenize(prompt, AddSpecial|ParseSpecial)
	if err != nil {
		t.Fatal(err)
	}
	res, err := turnSession(t, m).ChatTurnMessage(context.Background(), req, WithTemperature(0), WithMaxTokens(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.PromptTokens != len(toks) {
		t.Fatalf("the turn evaluated %d prompt tokens; the prompt tokenizes to %d", res.Usage.PromptTokens, len(toks))
	}
}

// TestChatTurnPromptErrors: a bad request is ErrInvalidArgument with the library's message, the
// same error ChatTurnMessage gives.
func TestChatTurnPromptErrors(t *testing.T) {
	m := sharedModel(t)
	s := turnSession(t, m)
	for _, c := range badTurnRequests {
		prompt, err := m.ChatTurnPrompt(c.req)
		e := invalidArgument(err, c.want)
		if prompt != "" || e == nil {
			t.Fatalf("%s: ChatTurnPrompt = %q, %v", c.name, prompt, err)
		}
		_, turnErr := s.ChatTurnMessage(context.Background(), c.req, WithMaxTokens(4))
		var te *Error
		if !errors.As(turnErr, &te) || te.Message != e.Message {
			t.Fatalf("%s: ChatTurnPrompt says %q, the turn %v", c.name, e.Message, turnErr)
		}
		t.Logf("%s: %v", c.name, err)
	}
	if _, err := m.ChatTurnPrompt(TurnRequest{Messages: []TurnMessage{UserMessage("hi")}}, WithTurnTemplateName("no_such_template")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown template name: %v", err)
	}
}
