package zerfoo

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// One C-callable trampoline for every stream (purego callbacks are never freed and are limited
// to about 2000 per process). C receives only an integer handle as user_data; the handle maps
// to the Go sink in a sync.Map, so no Go pointer is ever kept by C.

type sink struct {
	fn    func(piece string) bool // false stops generation
	panic any                     // a panic recovered in fn, re-raised after the C call returns
}

var (
	streamCB    uintptr
	streamCBOne sync.Once
	sinks       sync.Map // uintptr -> *sink
	nextSink    atomic.Uintptr
)

func trampoline() uintptr {
	streamCBOne.Do(func() { streamCB = purego.NewCallback(onPiece) })
	return streamCB
}

// onPiece is the zf_stream_cb: int32_t (*)(void* user_data, const char* piece, size_t len, int32_t token).
func onPiece(userData uintptr, piece *byte, n uintptr, _ int32) (stop int32) {
	v, ok := sinks.Load(userData)
	if !ok {
		return 1
	}
	s := v.(*sink)
	text := string(unsafe.Slice(piece, n)) // copy: the bytes are valid only during the call
	// A panic must not unwind through C frames: stop generation and re-raise it in Go.
	defer func() {
		if r := recover(); r != nil {
			s.panic = r
			stop = 1
		}
	}()
	if !s.fn(text) {
		return 1
	}
	return 0
}

func registerSink(s *sink) uintptr {
	h := nextSink.Add(1)
	sinks.Store(h, s)
	return h
}
