package zerfoo

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// LoraAdapter is a LoRA adapter loaded against a model (zf_lora_load): a GGUF file as
// llama.cpp's convert_lora_to_gguf.py writes it. Sessions apply it with Session.SetLoras. It is
// immutable and may be shared by any number of sessions and goroutines; it keeps its model
// alive, and a session applying it keeps it alive, so Close may come in any order.
type LoraAdapter struct {
	h       *loraHandle
	cleanup runtime.Cleanup
}

type loraHandle struct {
	mu     sync.RWMutex // R: a call is using ptr; W: Close
	ptr    uintptr
	closed bool
}

func (h *loraHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	lib.loraFree(h.ptr)
	h.ptr = 0
}

// LoraInfo describes an adapter (zf_lora_summary).
type LoraInfo struct {
	Rank     int     // the largest rank of its pairs
	Alpha    float32 // adapter.lora.alpha (0 when the file has none)
	NWeights int     // adapted weights (lora_a/lora_b pairs)
}

type cLoraSummary struct {
	structSize uint32
	rank       int32
	alpha      float32
	nWeights   uint32
}

// LoadLora loads the adapter at path against the model. The loader checks the architecture,
// that every adapted weight exists in the model and that the shapes match
// (ErrInvalidArgument, ErrFormat or ErrUnsupported with a message naming the tensor otherwise).
func (m *Model) LoadLora(path string) (*LoraAdapter, error) {
	cpath := cstr(path)
	var ptr uintptr
	err := m.use(func(mp uintptr) error {
		return call("load LoRA adapter", func() int32 { return lib.loraLoad(mp, &cpath[0], &ptr) })
	})
	runtime.KeepAlive(cpath)
	if e, ok := err.(*Error); ok && !strings.Contains(e.Message, path) {
		e.Op = fmt.Sprintf("load LoRA adapter %q", path)
	}
	if err != nil {
		return nil, err
	}
	h := &loraHandle{ptr: ptr}
	a := &LoraAdapter{h: h}
	a.cleanup = runtime.AddCleanup(a, (*loraHandle).close, h)
	return a, nil
}

// Close releases the adapter. It is idempotent; sessions applying it keep it until they change
// their set or close.
func (a *LoraAdapter) Close() error {
	if a == nil || a.h == nil {
		return nil
	}
	a.cleanup.Stop()
	a.h.close()
	return nil
}

// Info returns the adapter's rank, alpha and number of adapted weights.
func (a *LoraAdapter) Info() (LoraInfo, error) {
	if a == nil || a.h == nil {
		return LoraInfo{}, ErrClosed
	}
	a.h.mu.RLock()
	defer a.h.mu.RUnlock()
	if a.h.closed {
		return LoraInfo{}, ErrClosed
	}
	var c cLoraSummary
	c.structSize = uint32(unsafe.Sizeof(c))
	if err := call("LoRA info", func() int32 { return lib.loraInfo(a.h.ptr, &c) }); err != nil {
		return LoraInfo{}, err
	}
	return LoraInfo{Rank: int(c.rank), Alpha: c.alpha, NWeights: int(c.nWeights)}, nil
}

// SetLoras sets the adapters the session applies from now on, adapters[i] with scales[i]
// (zf_session_set_loras): each adapted weight computes W x + s B (A x), s = scale * alpha /
// rank. No adapters clears the set; scale 0 leaves an adapter out (the base model's output bit
// for bit). The conversation's KV cache stays as it was computed: Reset starts afresh under the
// new set.
func (s *Session) SetLoras(adapters []*LoraAdapter, scales []float32) error {
	if len(adapters) != len(scales) {
		return &Error{Status: 1, Op: "set LoRA adapters",
			Message: fmt.Sprintf("%d adapters but %d scales", len(adapters), len(scales))}
	}
	h, err := s.lock()
	if err != nil {
		return err
	}
	defer h.busy.Unlock()
	defer runtime.KeepAlive(s)
	ptrs := make([]uintptr, len(adapters))
	for i, a := range adapters {
		if a == nil || a.h == nil {
			return ErrClosed
		}
		a.h.mu.RLock() // not closed during the call
		defer a.h.mu.RUnlock()
		if a.h.closed {
			return ErrClosed
		}
		ptrs[i] = a.h.ptr
	}
	var pa *uintptr
	var ps *float32
	if len(ptrs) > 0 {
		pa, ps = &ptrs[0], &scales[0]
	}
	err = call("set LoRA adapters", func() int32 { return lib.sessionSetLoras(h.ptr, pa, ps, uintptr(len(ptrs))) })
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(scales)
	runtime.KeepAlive(adapters)
	return err
}
