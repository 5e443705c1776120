package zerfoo

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Images in the prompt through the binding (issue #46 §2), on Gemma 3 270M with tests/vision's
// synthesized projector (random weights: the text is noise, so the checks are the positions the
// image takes, that the same greedy request answers the same twice, and the errors).

func gemma3Full(t *testing.T) (*Model, *Mmproj) {
	t.Helper()
	p := gemma3Path(t)
	path := mmprojPath(t)
	m, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	mm, err := m.LoadMmproj(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mm.Close() })
	return m, mm
}

func TestChatTurnWithImage(t *testing.T) {
	m, mm := gemma3Full(t)
	_, pic := testPicture(t, 64, 48)
	req := TurnRequest{Messages: []TurnMessage{{Role: "user", Content: "What is this?", Images: [][]byte{pic}}}}
	opts := []GenOption{WithTemperature(0), WithMaxTokens(6), WithTurnMmproj(mm)}
	a, err := turnSession(t, m).ChatTurnMessage(context.Background(), req, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := turnSession(t, m).ChatTurnMessage(context.Background(), req, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if a.Message.JSON != b.Message.JSON {
		t.Errorf("the same greedy turn answered %s, then %s", a.Message.JSON, b.Message.JSON)
	}
	text, err := turnSession(t, m).ChatTurnMessage(context.Background(),
		TurnRequest{Messages: []TurnMessage{UserMessage("What is this?")}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if a.Usage.PromptTokens < text.Usage.PromptTokens+256 {
		t.Errorf("prompt tokens %d with the image, %d without: the image's 256 positions are missing",
			a.Usage.PromptTokens, text.Usage.PromptTokens)
	}
	// Without the projector the image part is refused by name.
	_, err = turnSession(t, m).ChatTurnMessage(context.Background(), req, WithMaxTokens(2))
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "messages[0].content[0]") {
		t.Errorf("without WithTurnMmproj: %v", err)
	}
}

func TestEvalImageAndEmbeddings(t *testing.T) {
	m, mm := gemma3Full(t)
	_, pic := testPicture(t, 64, 48)
	s := turnSession(t, m)
	if err := s.EvalImage(mm, pic); err != nil {
		t.Fatal(err)
	}
	n, err := s.NPast()
	if err != nil || n < 256 {
		t.Fatalf("after EvalImage the session holds %d positions (%v); want the image's 256 and its markers", n, err)
	}
	// The raw-prompt route: Generate continues after the image.
	r, err := s.Generate(context.Background(), "Describe:", WithTemperature(0), WithMaxTokens(4))
	if err != nil || r.NGenerated == 0 {
		t.Fatalf("generate after the image: %+v %v", r, err)
	}
	// The embeddings themselves, bidirectional as Gemma 3 reads an image.
	rows, err := mm.EmbedImage(pic, 1)
	if err != nil {
		t.Fatal(err)
	}
	s2 := turnSession(t, m)
	if err := s2.EvalEmbeddings(rows, true); err != nil {
		t.Fatal(err)
	}
	if n, _ := s2.NPast(); n != len(rows) {
		t.Errorf("EvalEmbeddings of %d rows: the session holds %d", len(rows), n)
	}
	// Errors: rows of another width, no rows, bytes that are no image.
	if err := s2.EvalEmbeddings([][]float32{make([]float32, 3)}, false); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("rows of width 3: %v", err)
	}
	if err := s2.EvalEmbeddings(nil, false); err == nil {
		t.Error("no rows accepted")
	}
	if err := s2.EvalImage(mm, []byte("not an image")); err == nil || !strings.Contains(err.Error(), "image") {
		t.Errorf("bytes that are no image: %v", err)
	}
}
