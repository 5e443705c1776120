package zerfoo

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Whisper tiny.en on jfk.wav through the binding: whisper.cpp 1.8.5's segments
// (tests/data/golden/whisper/tiny.en-jfk.json), the callback in order, errors named.
// Model: ZERFOO_WHISPER_MODEL (test.sh sets it from scripts/fetch_models.sh whisper-tiny-en).

func whisperModel(t *testing.T) *SpeechModel {
	t.Helper()
	needLib(t)
	p := os.Getenv("ZERFOO_WHISPER_MODEL")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache/zerfoo/models/ggml-tiny.en.bin")
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Whisper tiny.en missing (set ZERFOO_WHISPER_MODEL): %v", err)
		}
	}
	m, err := OpenSpeech(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func jfkPCM(t *testing.T) []float32 {
	t.Helper()
	b, err := os.ReadFile("../../tests/data/golden/whisper/jfk.wav")
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	return pcm
}

func TestSpeechTinyEnMatchesWhisperCpp(t *testing.T) {
	m := whisperModel(t)
	info, err := m.Info()
	if err != nil || info.NVocab != 51864 || info.NMels != 80 || info.Multilingual {
		t.Fatalf("info %+v, %v", info, err)
	}
	pcm := jfkPCM(t)
	if len(pcm) != 176000 {
		t.Fatalf("%d samples", len(pcm))
	}
	var g struct {
		Greedy struct {
			Segments []struct {
				T0, T1 int64
				Text   string
				Tokens []int32
			}
		}
	}
	b, _ := os.ReadFile("../../tests/data/golden/whisper/tiny.en-jfk.json")
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	var seen []Segment
	tr, err := m.TranscribeFunc(pcm, TranscribeOptions{Threads: 2}, func(s Segment) bool {
		seen = append(seen, s)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Segments) != len(g.Greedy.Segments) || !reflect.DeepEqual(seen, tr.Segments) {
		t.Fatalf("segments %+v, callback saw %+v", tr.Segments, seen)
	}
	var text string
	for i, w := range g.Greedy.Segments {
		s := tr.Segments[i]
		var ids []int32
		for _, k := range s.Tokens {
			ids = append(ids, k.ID)
			if k.P <= 0 || k.P > 1 {
				t.Errorf("token %+v", k)
			}
		}
		if s.T0Ms != w.T0*10 || s.T1Ms != w.T1*10 || s.Text != w.Text || !reflect.DeepEqual(ids, w.Tokens) {
			t.Errorf("segment %d: %+v, want %+v", i, s, w)
		}
		text += w.Text
	}
	if tr.Text != text || tr.Language != "en" {
		t.Errorf("text %q language %q", tr.Text, tr.Language)
	}
	var pieces strings.Builder
	for _, k := range tr.Segments[0].Tokens {
		p, err := m.TokenText(k.ID)
		if err != nil {
			t.Fatal(err)
		}
		pieces.WriteString(p)
	}
	if pieces.String() != tr.Segments[0].Text {
		t.Errorf("token texts %q", pieces.String())
	}
	// Stopping after the first segment keeps it.
	tr, err = m.TranscribeFunc(pcm, TranscribeOptions{Threads: 2}, func(Segment) bool { return false })
	if err != nil || len(tr.Segments) != 1 {
		t.Fatalf("stop: %v, %+v", err, tr)
	}
}

func TestSpeechErrorsNamed(t *testing.T) {
	m := whisperModel(t)
	pcm := jfkPCM(t)[:16000]
	_, err := m.Transcribe(pcm, TranscribeOptions{Language: "xx"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "language 'xx'") {
		t.Errorf("language xx: %v", err)
	}
	_, err = m.Transcribe(pcm, TranscribeOptions{Translate: true})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "English-only") {
		t.Errorf("translate: %v", err)
	}
	if _, err = m.Transcribe(nil, TranscribeOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty pcm: %v", err)
	}
	if _, err = DecodeWAV([]byte("not a wav file at all")); !strings.Contains(fmtErr(err), "not a WAV file") {
		t.Errorf("bad wav: %v", err)
	}
	if _, err = OpenSpeech("/nonexistent/ggml-tiny.en.bin"); !errors.Is(err, ErrIO) {
		t.Errorf("missing file: %v", err)
	}
	// A panic in the callback stops decoding and reaches the caller (never unwinding through C).
	func() {
		defer func() {
			if r := recover(); r != "from the callback" {
				t.Errorf("recovered %v", r)
			}
		}()
		m.TranscribeFunc(jfkPCM(t)[:16000*3], TranscribeOptions{}, func(Segment) bool { panic("from the callback") })
	}()
	m.Close()
	if _, err = m.Transcribe(pcm, TranscribeOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("closed: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The decoding options reach the library: a prompt, beam search and word timestamps give
// whisper.cpp's results (tests/data/golden/whisper/tiny.en-jfk-decoding.json); a seed makes
// sampling reproducible; a bad field is named.
func TestSpeechDecodingOptionsMatchWhisperCpp(t *testing.T) {
	m := whisperModel(t)
	pcm := jfkPCM(t)
	type seg struct {
		T0, T1    int64
		Text      string
		Tokens    []int32
		TokenData [][]float64 `json:"token_data"`
	}
	var g struct {
		Prompt       string
		GreedyPrompt struct{ Segments []seg } `json:"greedy_prompt"`
		Beam5        struct{ Segments []seg } `json:"beam5"`
		TokenTimes   struct{ Segments []seg } `json:"greedy_token_timestamps"`
	}
	b, _ := os.ReadFile("../../tests/data/golden/whisper/tiny.en-jfk-decoding.json")
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	check := func(name string, o TranscribeOptions, want []seg) *Transcription {
		tr, err := m.Transcribe(pcm, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(tr.Segments) != len(want) {
			t.Fatalf("%s: %+v, want %+v", name, tr.Segments, want)
		}
		for i, w := range want {
			s := tr.Segments[i]
			if s.T0Ms != w.T0*10 || s.T1Ms != w.T1*10 || s.Text != w.Text {
				t.Errorf("%s segment %d: %+v, want %+v", name, i, s, w)
			}
		}
		return tr
	}
	check("prompt", TranscribeOptions{Threads: 2, Prompt: g.Prompt}, g.GreedyPrompt.Segments)
	check("beam 5", TranscribeOptions{Threads: 2, BeamSize: 5}, g.Beam5.Segments)
	tr := check("word timestamps", TranscribeOptions{Threads: 2, WordTimestamps: true}, g.TokenTimes.Segments)
	for i, w := range g.TokenTimes.Segments {
		s := tr.Segments[i]
		for k, d := range w.TokenData {
			if s.Tokens[k].T0Ms != int64(d[5])*10 || s.Tokens[k].T1Ms != int64(d[6])*10 {
				t.Errorf("segment %d token %d: %+v, want t0 %v t1 %v (x10 ms)", i, k, s.Tokens[k], d[5], d[6])
			}
		}
		var joined string
		for _, wd := range s.Words {
			joined += wd.Text
			if !strings.HasPrefix(wd.Text, " ") || wd.T0Ms > wd.T1Ms {
				t.Errorf("word %+v", wd)
			}
		}
		if joined != s.Text {
			t.Errorf("words %q, text %q", joined, s.Text)
		}
	}
	o := TranscribeOptions{Threads: 2, Temperature: 1, NoFallback: true, Seed: 42}
	a, err1 := m.Transcribe(pcm, o)
	c, err2 := m.Transcribe(pcm, o)
	if err1 != nil || err2 != nil || a.Text != c.Text || a.Text == "" || a.Segments[0].Temperature != 1 {
		t.Errorf("seeded sampling: %q vs %q (%v, %v)", a.Text, c.Text, err1, err2)
	}
	if _, err := m.Transcribe(pcm[:16000], TranscribeOptions{BeamSize: 9}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "params->beam_size") {
		t.Errorf("beam 9: %v", err)
	}
}
