package zerfoo

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Images through the binding on tests/vision's synthesized Gemma 3 projector, bound to Gemma 3
// 270M: the projector's facts, RGB pixels = the PNG of the same pixels, errors named.
// Environment: ZERFOO_VISION_MODELS (the folder tests/vision/make_models.sh writes; test.sh
// sets it) and ZERFOO_GEMMA3_MODEL (default: the Gemma 3 270M file in ~/.cache/zerfoo/models).

// gemma3Path is Gemma 3 270M's file (the test skips without it).
func gemma3Path(t *testing.T) string {
	t.Helper()
	needLib(t)
	p := os.Getenv("ZERFOO_GEMMA3_MODEL")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache/zerfoo/models/gemma-3-270m-q4_k_m.gguf")
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Gemma 3 270M missing (set ZERFOO_GEMMA3_MODEL): %v", err)
	}
	return p
}

func gemma3Model(t *testing.T) *Model {
	t.Helper()
	m, err := Open(gemma3Path(t), WithVocabOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func mmprojPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ZERFOO_VISION_MODELS")
	if dir == "" {
		t.Skip("ZERFOO_VISION_MODELS is not set (tests/vision/make_models.sh DIR writes the projectors)")
	}
	p := filepath.Join(dir, "mmproj-gemma3-f16.gguf")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("projector missing: %v", err)
	}
	return p
}

// A w x h picture of gradients and a checker, as RGB bytes and as a PNG.
func testPicture(t *testing.T, w, h int) ([]byte, []byte) {
	t.Helper()
	rgb := make([]byte, 0, w*h*3)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8(((x / 8) ^ (y / 8)) & 1 * 200), 255}
			img.SetNRGBA(x, y, c)
			rgb = append(rgb, c.R, c.G, c.B)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return rgb, buf.Bytes()
}

func TestMmprojEmbedsImages(t *testing.T) {
	m := gemma3Model(t)
	p, err := m.LoadMmproj(mmprojPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	info, err := p.Info()
	want := MmprojInfo{ProjectorType: "gemma3", ImageSize: 896, PatchSize: 14, NTokens: 256, NEmbd: 640, NEmbdVision: 64, NLayer: 2,
		Modalities: ModalityImage}
	if err != nil || info != want {
		t.Fatalf("info %+v, %v; want %+v", info, err, want)
	}
	rgb, pngBytes := testPicture(t, 120, 90)
	fromPNG, err := p.EmbedImage(pngBytes, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromPNG) != 256 || len(fromPNG[0]) != 640 {
		t.Fatalf("%d tokens of %d", len(fromPNG), len(fromPNG[0]))
	}
	for i, row := range fromPNG {
		norm := 0.0
		for _, v := range row {
			norm += float64(v) * float64(v)
		}
		if math.IsNaN(norm) || norm == 0 {
			t.Fatalf("token %d has norm %v", i, norm)
		}
	}
	fromRGB, err := p.EmbedRGB(rgb, 120, 90, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromPNG, fromRGB) {
		t.Fatal("RGB pixels and the PNG of the same pixels embed differently")
	}
	// The projector keeps its model: closing the model first leaves it usable.
	m.Close()
	if _, err := p.EmbedRGB(rgb, 120, 90, 1); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.EmbedImage(pngBytes, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestMmprojErrorsAreNamed(t *testing.T) {
	m := gemma3Model(t)
	path := mmprojPath(t)
	p, err := m.LoadMmproj(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rgb, pngBytes := testPicture(t, 16, 16)
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 48)...)
	cases := []struct {
		name   string
		embed  func() error
		is     error
		phrase string
	}{
		{"webp", func() error { _, e := p.EmbedImage(webp, 1); return e }, ErrInvalidArgument, "WebP"},
		{"truncated", func() error { _, e := p.EmbedImage(pngBytes[:len(pngBytes)/2], 1); return e }, ErrFormat, "image:"},
		{"empty", func() error { _, e := p.EmbedImage(nil, 1); return e }, ErrInvalidArgument, "image->data is NULL"},
		{"rgb size", func() error { _, e := p.EmbedRGB(rgb, 16, 17, 1); return e }, ErrInvalidArgument, "width * height * 3"},
		{"too large", func() error { _, e := p.EmbedRGB(rgb, 10000, 10000, 1); return e }, ErrInvalidArgument, "exceed the budget"},
		{"threads", func() error { _, e := p.EmbedImage(pngBytes, -1); return e }, ErrInvalidArgument, "n_threads"},
	}
	for _, c := range cases {
		err := c.embed()
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.phrase) {
			t.Errorf("%s: %v; want %v mentioning %q", c.name, err, c.is, c.phrase)
		}
	}
	// A projector of another model: SmolLM2 (576 wide, a llama).
	smol, err := Open(modelPath(t), WithVocabOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer smol.Close()
	_, err = smol.LoadMmproj(path)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "embedding width 576") ||
		!strings.Contains(err.Error(), "the model is 'llama'") {
		t.Fatalf("mismatched model: %v", err)
	}
	if _, err := m.LoadMmproj("/nonexistent/mmproj.gguf"); !errors.Is(err, ErrIO) {
		t.Fatalf("missing file: %v", err)
	}
}
