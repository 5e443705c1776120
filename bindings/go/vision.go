package zerfoo

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Mmproj is a multimodal projector (llama.cpp's mmproj GGUF) loaded for a model (zf_mmproj_load):
// it turns images (a vision projector) or audio clips (an audio projector; see
// MmprojInfo.Modalities) into the embeddings the model takes in its prompt. It is immutable: any
// number of goroutines may call EmbedImage or EmbedAudio at once. It keeps its model alive, so Close may come in any
// order (idempotent; a cleanup does it if forgotten).
type Mmproj struct {
	h       *mmprojHandle
	cleanup runtime.Cleanup
}

type mmprojHandle struct {
	mu     sync.RWMutex // R: a call is using ptr; W: Close
	ptr    uintptr
	closed bool
}

func (h *mmprojHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	lib.mmprojFree(h.ptr)
	h.ptr = 0
}

// MmprojInfo describes a projector (zf_mmproj_summary).
type MmprojInfo struct {
	ProjectorType string   // clip.projector_type, e.g. "gemma3"
	ImageSize     int      // the encoder's square input side in pixels
	PatchSize     int      // pixels per patch side
	NTokens       int      // embeddings per image
	NEmbd         int      // width of each embedding (the model's)
	NEmbdVision   int      // the vision encoder's own width
	NLayer        int      // vision encoder blocks
	Modalities    Modality // what it encodes: ModalityImage and/or ModalityAudio
	SampleRate    int      // audio projectors: the PCM rate EmbedAudio takes (16000); else 0
}

// Modality is a set of the inputs a projector encodes (zf_mmproj_summary.modalities).
type Modality uint32

const (
	ModalityImage Modality = 1 // EmbedImage, EvalImage, TurnMessage.Images
	ModalityAudio Modality = 2 // EmbedAudio, EvalAudio, TurnMessage.Audio
)

// Has reports whether every modality of m2 is in m.
func (m Modality) Has(m2 Modality) bool { return m&m2 == m2 }

type cMmprojSummary struct {
	structSize    uint32
	imageSize     int32
	patchSize     int32
	nTokens       int32
	nEmbd         int32
	nEmbdVision   int32
	nLayer        int32
	reserved      uint32
	projectorType *byte
	modalities    uint32 // since 0.7's audio projectors
	sampleRate    int32
}

// zf_image.
type cImage struct {
	structSize    uint32
	format        uint32
	data          *byte
	size          uintptr
	width, height uint32
}

const (
	imageEncoded = 0
	imageRGB8    = 1
)

// MaxImagePixels is the largest image EmbedImage takes (width x height): 8192 x 8192.
const MaxImagePixels = 8192 * 8192

// LoadMmproj loads the projector at path for the model. A projector of another model (its
// output width is not the model's embedding width, or its type another family) fails with
// ErrInvalidArgument naming both; a malformed file with ErrFormat naming the key or tensor.
func (m *Model) LoadMmproj(path string) (*Mmproj, error) {
	cpath := cstr(path)
	var ptr uintptr
	err := m.use(func(mp uintptr) error {
		return call("load mmproj", func() int32 { return lib.mmprojLoad(mp, &cpath[0], 0, &ptr) })
	})
	runtime.KeepAlive(cpath)
	if e, ok := err.(*Error); ok && !strings.Contains(e.Message, path) {
		e.Op = fmt.Sprintf("load mmproj %q", path)
	}
	if err != nil {
		return nil, err
	}
	h := &mmprojHandle{ptr: ptr}
	p := &Mmproj{h: h}
	p.cleanup = runtime.AddCleanup(p, (*mmprojHandle).close, h)
	return p, nil
}

// Close releases the projector (and its hold on the model); idempotent.
func (p *Mmproj) Close() error {
	if p == nil || p.h == nil {
		return nil
	}
	p.cleanup.Stop()
	p.h.close()
	return nil
}

func (p *Mmproj) use(f func(ptr uintptr) error) error {
	if p == nil || p.h == nil {
		return ErrClosed
	}
	p.h.mu.RLock()
	defer p.h.mu.RUnlock()
	if p.h.closed {
		return ErrClosed
	}
	return f(p.h.ptr)
}

// Info describes the projector.
func (p *Mmproj) Info() (MmprojInfo, error) {
	var c cMmprojSummary
	c.structSize = uint32(unsafe.Sizeof(c))
	var info MmprojInfo
	err := p.use(func(ptr uintptr) error {
		if err := call("mmproj info", func() int32 { return lib.mmprojInfo(ptr, &c) }); err != nil {
			return err
		}
		info = MmprojInfo{ImageSize: int(c.imageSize), PatchSize: int(c.patchSize), NTokens: int(c.nTokens),
			NEmbd: int(c.nEmbd), NEmbdVision: int(c.nEmbdVision), NLayer: int(c.nLayer),
			Modalities: Modality(c.modalities), SampleRate: int(c.sampleRate)}
		if c.projectorType != nil { // owned by the projector: copied while it is held
			info.ProjectorType = goString(c.projectorType)
		}
		return nil
	})
	return info, err
}

// EmbedImage encodes an image file's bytes (JPEG, PNG, GIF's first frame, BMP) into the
// embeddings the model takes in its prompt: one []float32 of Info().NEmbd per token. threads 0
// uses the machine's cores (at most 8). Bad bytes fail with ErrFormat or ErrInvalidArgument
// (WebP, an unknown container, over MaxImagePixels) naming the problem.
func (p *Mmproj) EmbedImage(data []byte, threads int) ([][]float32, error) {
	return p.embed(cImage{format: imageEncoded}, data, threads)
}

// EmbedRGB is EmbedImage for raw pixels: height rows of width pixels, R G B bytes each.
func (p *Mmproj) EmbedRGB(rgb []byte, width, height, threads int) ([][]float32, error) {
	if width < 0 || height < 0 || width > 1<<31 || height > 1<<31 {
		return nil, &Error{Status: 1, Op: "embed image", Message: fmt.Sprintf("width x height %d x %d is out of range", width, height)}
	}
	return p.embed(cImage{format: imageRGB8, width: uint32(width), height: uint32(height)}, rgb, threads)
}

func (p *Mmproj) embed(im cImage, data []byte, threads int) ([][]float32, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	im.structSize = uint32(unsafe.Sizeof(im))
	if len(data) > 0 {
		im.data = &data[0]
		im.size = uintptr(len(data))
	}
	var out []float32
	var nTok int32
	err := p.use(func(ptr uintptr) error {
		// The size first (the image is decoded, not encoded), then the embeddings.
		var needed uintptr
		err := call("embed image", func() int32 { return lib.imageEmbed(ptr, &im, int32(threads), nil, 0, &needed, &nTok) })
		if !errors.Is(err, ErrBufferTooSmall) || needed == 0 {
			return err
		}
		out = make([]float32, needed)
		return call("embed image", func() int32 {
			return lib.imageEmbed(ptr, &im, int32(threads), &out[0], uintptr(len(out)), &needed, &nTok)
		})
	})
	runtime.KeepAlive(data)
	if err != nil {
		return nil, err
	}
	return splitRows("embed image", out, nTok)
}

// splitRows views an encoder's output (nTok rows, row-major) as one slice per row.
func splitRows(op string, out []float32, nTok int32) ([][]float32, error) {
	if nTok <= 0 || len(out)%int(nTok) != 0 {
		return nil, &Error{Status: 12, Op: op, Message: fmt.Sprintf("%d floats for %d tokens", len(out), nTok)}
	}
	w := len(out) / int(nTok)
	rows := make([][]float32, nTok)
	for i := range rows {
		rows[i] = out[i*w : (i+1)*w : (i+1)*w]
	}
	return rows, nil
}
