package zerfoo

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Audio through the binding (issue #46) on SmolLM2-135M with tests/vision's synthesized ultravox
// projector (random weights: the text is noise, so the checks are the rows, the positions the
// clip takes, that the same greedy request answers the same twice, and the errors) and the first
// 4 s of the sdist's test-2.mp3 (tests/data/audio/test-2-4s.wav). Environment:
// ZERFOO_VISION_MODELS (test.sh runs tests/vision/make_audio_models.sh into its audio/ folder).

func audioMmprojPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ZERFOO_VISION_MODELS")
	if dir == "" {
		t.Skip("ZERFOO_VISION_MODELS is not set (tests/vision/make_audio_models.sh DIR/audio writes the projectors)")
	}
	p := filepath.Join(dir, "audio", "mmproj-ultravox-f16.gguf")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("audio projector missing: %v", err)
	}
	return p
}

// testClip returns the test clip's WAV bytes and its 16 kHz samples.
func testClip(t *testing.T) ([]byte, []float32) {
	t.Helper()
	wav, err := os.ReadFile("../../tests/data/audio/test-2-4s.wav")
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := DecodeWAV(wav)
	if err != nil {
		t.Fatal(err)
	}
	return wav, pcm
}

// smolAudio is SmolLM2 (vocabOnly: tokenizer and widths only) with the ultravox projector.
func smolAudio(t *testing.T, vocabOnly bool) (*Model, *Mmproj) {
	t.Helper()
	opts := []ModelOption{}
	if vocabOnly {
		opts = append(opts, WithVocabOnly())
	}
	m, err := Open(modelPath(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	mm, err := m.LoadMmproj(audioMmprojPath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mm.Close() })
	return m, mm
}

func TestMmprojEmbedsAudio(t *testing.T) {
	_, mm := smolAudio(t, true)
	info, err := mm.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.ProjectorType != "ultravox" || info.Modalities != ModalityAudio || !info.Modalities.Has(ModalityAudio) ||
		info.Modalities.Has(ModalityImage) || info.SampleRate != AudioSampleRate || info.NEmbd != 576 {
		t.Fatalf("info %+v", info)
	}
	_, pcm := testClip(t)
	rows, err := mm.EmbedAudio(pcm, 2)
	if err != nil {
		t.Fatal(err)
	}
	// 4 s is one 30 s chunk: 375 rows of the model's width (ultravox as synthesized).
	if len(rows) != 375 || len(rows[0]) != info.NEmbd {
		t.Fatalf("%d rows of %d", len(rows), len(rows[0]))
	}
	for i, row := range rows {
		norm := 0.0
		for _, v := range row {
			norm += float64(v) * float64(v)
		}
		if math.IsNaN(norm) || math.IsInf(norm, 0) || norm == 0 {
			t.Fatalf("row %d has norm %v", i, norm)
		}
	}
	again, err := mm.EmbedAudio(pcm, 1)
	if err != nil || !reflect.DeepEqual(rows, again) {
		t.Fatalf("the same clip on 1 thread: %v (equal: %v)", err, reflect.DeepEqual(rows, again))
	}
	// EncodeWAV writes the samples exactly.
	back, err := DecodeWAV(EncodeWAV(pcm))
	if err != nil || !reflect.DeepEqual(back, pcm) {
		t.Fatalf("EncodeWAV then DecodeWAV: %v (equal: %v)", err, reflect.DeepEqual(back, pcm))
	}
}

func TestAudioErrorsAreNamed(t *testing.T) {
	_, mm := smolAudio(t, true)
	_, pcm := testClip(t)
	nan := append([]float32(nil), pcm...)
	nan[1234] = float32(math.NaN())
	_, png := testPicture(t, 16, 16)
	cases := []struct {
		name   string
		err    error
		phrase string
	}{
		{"empty", func() error { _, e := mm.EmbedAudio(nil, 1); return e }(), "at least 160"},
		{"short", func() error { _, e := mm.EmbedAudio(pcm[:159], 1); return e }(), "at least 160"},
		{"NaN", func() error { _, e := mm.EmbedAudio(nan, 1); return e }(), "pcm[1234] is NaN"},
		{"threads", func() error { _, e := mm.EmbedAudio(pcm, -1); return e }(), "n_threads"},
		{"image", func() error { _, e := mm.EmbedImage(png, 1); return e }(), "encodes audio, not images"},
	}
	for _, c := range cases {
		if !errors.Is(c.err, ErrInvalidArgument) || !strings.Contains(c.err.Error(), c.phrase) {
			t.Errorf("%s: %v; want ErrInvalidArgument mentioning %q", c.name, c.err, c.phrase)
		}
	}
	// Audio to Gemma 3's vision projector.
	g := gemma3Model(t)
	vision, err := g.LoadMmproj(mmprojPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer vision.Close()
	if info, _ := vision.Info(); info.Modalities != ModalityImage || info.SampleRate != 0 {
		t.Errorf("vision projector's info %+v", info)
	}
	_, err = vision.EmbedAudio(pcm, 1)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "encodes images, not audio") {
		t.Errorf("audio to a vision projector: %v", err)
	}
}

func TestEvalAudioThenGenerate(t *testing.T) {
	m, mm := smolAudio(t, false)
	_, pcm := testClip(t)
	answer := func() string {
		s := turnSession(t, m)
		if err := s.EvalAudio(mm, pcm); err != nil {
			t.Fatal(err)
		}
		if n, err := s.NPast(); err != nil || n < 375 {
			t.Fatalf("after EvalAudio the session holds %d positions (%v); want the clip's 375", n, err)
		}
		r, err := s.Generate(context.Background(), "Transcript:", WithTemperature(0), WithMaxTokens(8))
		if err != nil || r.NGenerated == 0 {
			t.Fatalf("generate after the clip: %+v %v", r, err)
		}
		return r.Text
	}
	if a, b := answer(), answer(); a != b {
		t.Errorf("the same greedy generation after the clip gave %q, then %q", a, b)
	}
	// Refused before anything is appended.
	s := turnSession(t, m)
	nan := append([]float32(nil), pcm...)
	nan[7] = float32(math.Inf(1))
	if err := s.EvalAudio(mm, nan); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "pcm[7] is infinite") {
		t.Errorf("an infinite sample: %v", err)
	}
	if err := s.EvalAudio(mm, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("no samples: %v", err)
	}
	if n, _ := s.NPast(); n != 0 {
		t.Errorf("refused clips left %d positions", n)
	}
}

func TestChatTurnWithAudio(t *testing.T) {
	m, mm := smolAudio(t, false)
	wav, pcm := testClip(t)
	opts := []GenOption{WithTemperature(0), WithMaxTokens(6), WithTurnMmproj(mm)}
	turn := func(msg TurnMessage, extra ...GenOption) (*TurnResult, error) {
		return turnSession(t, m).ChatTurnMessage(context.Background(), TurnRequest{Messages: []TurnMessage{msg}},
			append(append([]GenOption(nil), opts...), extra...)...)
	}
	withAudio := TurnMessage{Role: "user", Content: "What do you hear?", Audio: [][]byte{wav}}
	a, err := turn(withAudio)
	if err != nil {
		t.Fatal(err)
	}
	// The same samples written by EncodeWAV are the same clip to the model.
	b, err := turn(TurnMessage{Role: "user", Content: "What do you hear?", Audio: [][]byte{EncodeWAV(pcm)}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Message.JSON != b.Message.JSON {
		t.Errorf("the file's WAV answered %s, EncodeWAV's %s", a.Message.JSON, b.Message.JSON)
	}
	text, err := turn(UserMessage("What do you hear?"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Usage.PromptTokens < 375 || a.Usage.PromptTokens < text.Usage.PromptTokens+375 {
		t.Errorf("prompt tokens %d with the clip, %d without: the clip's 375 positions are missing",
			a.Usage.PromptTokens, text.Usage.PromptTokens)
	}
	// Without the projector, and with an image for the audio projector, the part is refused by name.
	_, err = turnSession(t, m).ChatTurnMessage(context.Background(), TurnRequest{Messages: []TurnMessage{withAudio}},
		WithMaxTokens(2))
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "messages[0].content[0]") {
		t.Errorf("without WithTurnMmproj: %v", err)
	}
	_, png := testPicture(t, 16, 16)
	_, err = turn(TurnMessage{Role: "user", Content: "And this?", Images: [][]byte{png}})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "encodes audio, not images") {
		t.Errorf("an image for the audio projector: %v", err)
	}
}

// The parts a message with Images and Audio is written as (no library needed).
func TestTurnMessageAudioParts(t *testing.T) {
	msg := TurnMessage{Role: "user", Content: "Hi", Images: [][]byte{[]byte("GIF89a")}, Audio: [][]byte{[]byte("RIFF")}}
	b, err := msg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","content":[{"image_url":{"url":"data:image/gif;base64,R0lGODlh"},"type":"image_url"},` +
		`{"input_audio":{"data":"UklGRg==","format":"wav"},"type":"input_audio"},{"text":"Hi","type":"text"}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
