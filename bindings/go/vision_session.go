package zerfoo

import (
	"fmt"
	"runtime"
	"unsafe"
)

// EvalImage appends an image (encoded PNG, JPEG, GIF's first frame or BMP bytes) at the end of
// the session's conversation as libmtmd places it: the projector's begin marker, the image's
// embeddings, the end marker (zf_session_eval_image). With Generate after it (which continues
// the session) this is the raw-prompt route: Generate's prompt follows the image. The projector
// must belong to the session's model; errors name the problem (ErrFormat for corrupt bytes,
// ErrContextFull when it does not fit, nothing appended then).
func (s *Session) EvalImage(p *Mmproj, image []byte) error {
	im := cImage{format: imageEncoded}
	im.structSize = uint32(unsafe.Sizeof(im))
	if len(image) > 0 {
		im.data = &image[0]
		im.size = uintptr(len(image))
	}
	err := s.evalWith(p, "eval image", func(sp, mp uintptr) int32 { return lib.sessionEvalImage(sp, mp, &im, nil, 0) })
	runtime.KeepAlive(image)
	return err
}

// evalWith runs a zf_session_eval_* call f on the locked session and the projector in use.
func (s *Session) evalWith(p *Mmproj, op string, f func(sp, mp uintptr) int32) error {
	h, err := s.lock()
	if err != nil {
		return err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s)
	return p.use(func(mp uintptr) error { return call(op, func() int32 { return f(h.ptr, mp) }) })
}

// EvalEmbeddings appends rows of input embeddings (each of the model's embedding width, e.g.
// Mmproj.EmbedImage's) at the end of the session's conversation in place of token embeddings,
// one position each (zf_session_eval_embeddings). bidirectional: the rows attend to each other
// both ways, as Gemma 3 attends among one image's tokens (at most 512 rows then). Put the
// projector's markers around an image's rows yourself (EvalImage does it all).
func (s *Session) EvalEmbeddings(rows [][]float32, bidirectional bool) error {
	if len(rows) == 0 {
		return &Error{Status: 1, Op: "eval embeddings", Message: "no rows"}
	}
	width := len(rows[0])
	flat := make([]float32, 0, len(rows)*width)
	for i, r := range rows {
		if len(r) != width {
			return &Error{Status: 1, Op: "eval embeddings", Message: fmt.Sprintf("row %d has %d floats, row 0 has %d", i, len(r), width)}
		}
		flat = append(flat, r...)
	}
	var flags uint32
	if bidirectional {
		flags = 1 // ZF_EMBD_BIDIRECTIONAL
	}
	h, err := s.lock()
	if err != nil {
		return err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s)
	var data *float32
	if len(flat) > 0 {
		data = &flat[0]
	}
	err = call("eval embeddings", func() int32 {
		return lib.sessionEvalEmbd(h.ptr, data, uintptr(len(rows)), uintptr(width), flags, nil, 0)
	})
	runtime.KeepAlive(flat)
	return err
}
