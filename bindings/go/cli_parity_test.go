package zerfoo

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestGreedyMatchesCCLI: the same greedy generation through Go and through the C CLI (which
// uses only the C API) gives the same text. Needs ZERFOO_CLI (path to the `zerfoo` binary).
func TestGreedyMatchesCCLI(t *testing.T) {
	cli := os.Getenv("ZERFOO_CLI")
	if cli == "" {
		t.Skip("ZERFOO_CLI is not set: skipping the comparison with the C CLI")
	}
	m := sharedModel(t)
	out, err := exec.Command(cli, "generate", "-m", modelPath(t), "-p", prompt, "-n", "32",
		"--temp", "0", "-t", "1", "--json").Output()
	if err != nil {
		t.Fatalf("%s: %v", cli, err)
	}
	var c struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("CLI JSON %q: %v", out, err)
	}
	s, err := m.NewSession(WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Generate(context.Background(), prompt, WithTemperature(0), WithMaxTokens(32))
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != c.Text || r.Text == "" {
		t.Fatalf("Go %q != C CLI %q", r.Text, c.Text)
	}
}

// TestDraftsMatchCCLI: a greedy generation with prompt-lookup drafts through Go and through the
// C CLI (`generate --draft-max 8`) gives the same text, with drafts accepted on both sides (the
// counters themselves may differ: the draft length adapts to the acceptance).
func TestDraftsMatchCCLI(t *testing.T) {
	cli := os.Getenv("ZERFOO_CLI")
	if cli == "" {
		t.Skip("ZERFOO_CLI is not set: skipping the comparison with the C CLI")
	}
	m := sharedModel(t)
	p := "<|im_start|>user\nRepeat this text exactly: The quick brown fox jumps over the lazy dog. " +
		"The quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n"
	out, err := exec.Command(cli, "generate", "-m", modelPath(t), "-p", p, "-n", "40",
		"--temp", "0", "-t", "1", "--draft-max", "8", "--json").Output()
	if err != nil {
		t.Fatalf("%s: %v", cli, err)
	}
	var c struct {
		Text     string `json:"text"`
		Drafted  int    `json:"drafted_tokens"`
		Accepted int    `json:"accepted_tokens"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("CLI JSON %q: %v", out, err)
	}
	s, err := m.NewSession(WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Generate(context.Background(), p, WithTemperature(0), WithMaxTokens(40), WithDraftMax(8))
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != c.Text || r.NAccepted <= 0 || c.Accepted <= 0 || r.NDrafted < r.NAccepted {
		t.Fatalf("Go %q (drafted %d, accepted %d) != C CLI %q (drafted %d, accepted %d)",
			r.Text, r.NDrafted, r.NAccepted, c.Text, c.Drafted, c.Accepted)
	}
}
