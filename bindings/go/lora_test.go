package zerfoo

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// synthLora writes a random rank-8 adapter for the test model with scripts/synth_lora.py.
func synthLora(t *testing.T, model string, args ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "../../scripts/synth_lora.py")
	out := filepath.Join(t.TempDir(), "adapter.gguf")
	cmd := exec.Command("python3", append([]string{script, model, out}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("scripts/synth_lora.py: %v: %s", err, b)
	}
	return out
}

// Load an adapter, apply it with a scale (the greedy output changes), scale 0 and a cleared set
// give the base output, and a broken file fails with the loader's message.
func TestLora(t *testing.T) {
	path := modelPath(t)
	m := sharedModel(t)
	a, err := m.LoadLora(synthLora(t, path, "--seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	info, err := a.Info()
	if err != nil || info.Rank != 8 || info.Alpha != 16 || info.NWeights != 30*7 {
		t.Fatalf("Info() = %+v, %v; want rank 8, alpha 16, 210 weights", info, err)
	}
	ctx := context.Background()
	gen := func(s *Session) string {
		t.Helper()
		if err := s.Reset(); err != nil {
			t.Fatal(err)
		}
		r, err := s.Generate(ctx, prompt, WithTemperature(0), WithMaxTokens(12))
		if err != nil {
			t.Fatal(err)
		}
		return r.Text
	}
	s := newSession(t, m)
	base := gen(s)
	if err := s.SetLoras([]*LoraAdapter{a}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	adapted := gen(s)
	if adapted == base {
		t.Errorf("the adapter at scale 1 did not change the output %q", base)
	}
	if err := s.SetLoras([]*LoraAdapter{a}, []float32{0}); err != nil {
		t.Fatal(err)
	}
	if got := gen(s); got != base {
		t.Errorf("scale 0: %q, want the base output %q", got, base)
	}
	if err := s.SetLoras([]*LoraAdapter{a}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLoras(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := gen(s); got != base {
		t.Errorf("cleared: %q, want the base output %q", got, base)
	}
	// Closed while applied: the session keeps it.
	b, err := m.LoadLora(synthLora(t, path, "--seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLoras([]*LoraAdapter{b}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b.Close()
	if got := gen(s); got != adapted {
		t.Errorf("after Close of the applied adapter: %q, want %q", got, adapted)
	}
	if err := s.SetLoras([]*LoraAdapter{b}, []float32{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("SetLoras with a closed adapter: %v, want ErrClosed", err)
	}
	if err := s.SetLoras([]*LoraAdapter{a}, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("SetLoras with no scales: %v, want ErrInvalidArgument", err)
	}
	_, err = m.LoadLora(synthLora(t, path, "--layers", "0", "--defect", "bad_shape"))
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a misshaped adapter: %v, want ErrInvalidArgument", err)
	}
}
