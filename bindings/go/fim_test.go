package zerfoo

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// fimModel writes scripts/fim_model.py's copy of SmolLM2 with FIM tokens (pre 11, suf 12, mid 13,
// pad 14, rep 4, sep 5) into a temporary directory.
func fimModel(t *testing.T) string {
	t.Helper()
	src := modelPath(t)
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "scripts", "fim_model.py")
	out := filepath.Join(t.TempDir(), "fim.gguf")
	if b, err := exec.Command("python3", script, src, out).CombinedOutput(); err != nil {
		t.Fatalf("fim_model.py: %v: %s", err, b)
	}
	return out
}

func TestInfoFIMTokens(t *testing.T) {
	info, err := sharedModel(t).Info()
	if err != nil {
		t.Fatal(err)
	}
	// SmolLM2 has no prefix/suffix/middle tokens; its "<reponame>" is a repository token.
	want := FIMTokens{Pre: -1, Suf: -1, Mid: -1, Pad: -1, Rep: 4, Sep: -1}
	if info.FIM != want || info.FIM.HasInfill() {
		t.Fatalf("SmolLM2 FIM = %+v, want %+v", info.FIM, want)
	}
	m, err := Open(fimModel(t), WithVocabOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info, err = m.Info()
	if err != nil {
		t.Fatal(err)
	}
	want = FIMTokens{Pre: 11, Suf: 12, Mid: 13, Pad: 14, Rep: 4, Sep: 5}
	if info.FIM != want || !info.FIM.HasInfill() {
		t.Fatalf("FIM model = %+v, want %+v", info.FIM, want)
	}
}
