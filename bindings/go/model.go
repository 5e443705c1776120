package zerfoo

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Device selects the compute backend.
type Device int32

const (
	DeviceAuto Device = 0 // the GPU if usable, else the CPU
	DeviceCPU  Device = 1
	DeviceCUDA Device = 2
)

// ModelOption configures Open.
type ModelOption func(*cModelParams)

// WithDevice picks the backend (default DeviceAuto).
func WithDevice(d Device) ModelOption { return func(p *cModelParams) { p.device = int32(d) } }

// WithGPU picks the CUDA device ordinal (default 0).
func WithGPU(index int) ModelOption { return func(p *cModelParams) { p.gpuIndex = int32(index) } }

// WithDefaultThreads sets the CPU threads sessions use by default (0 = physical cores).
func WithDefaultThreads(n int) ModelOption { return func(p *cModelParams) { p.nThreads = int32(n) } }

// WithMaxBatch turns on batched decode (continuous batching) for n >= 2: Generate and Stream
// calls on different sessions of the model, from different goroutines, share each decode
// step (the weights are read once for up to n sequences). Every call still gets its own
// results and callbacks, and greedy output is the same alone or in a batch. 0 or 1 = off (the
// default); at most 64, else Open fails with ErrInvalidArgument. CPU only (ignored on CUDA).
func WithMaxBatch(n int) ModelOption { return func(p *cModelParams) { p.maxBatch = int32(n) } }

// WithPrefixCacheMiB bounds the model's prefix cache (zf_model_params.prefix_cache_mib): the KV
// rows of full 64-token blocks that sessions of the model evaluated are kept, keyed by the tokens
// of the block and of everything before it, and a session whose prompt continues its history
// with cached blocks copies them instead of computing them (a shared system prompt is evaluated
// once for every session). Reuse is exact: the logits are bit for bit those of evaluating the
// prompt (sessions made WithFastPrefill take no part). Least recently used blocks are dropped
// beyond mib MiB. 0 = the default (256 MiB), -1 = off; below -1 or above 1048576 Open fails with
// ErrInvalidArgument. A vocab-only model has no cache. See Model.CacheInfo.
func WithPrefixCacheMiB(mib int) ModelOption {
	return func(p *cModelParams) { p.prefixCacheMiB = int32(mib) }
}

// WithVocabOnly loads only metadata and the tokenizer (no sessions possible).
func WithVocabOnly() ModelOption { return func(p *cModelParams) { p.flags |= 0x1 } }

// WithNoMmap reads the file into memory instead of mapping it.
func WithNoMmap() ModelOption { return func(p *cModelParams) { p.flags |= 0x2 } }

// Model is a loaded GGUF model. It is immutable and safe for concurrent use by any number of
// goroutines; each conversation needs its own Session. Close it when done (sessions keep the
// underlying C model alive until they are closed too).
type Model struct {
	h       *modelHandle
	cleanup runtime.Cleanup
}

// modelHandle owns the C model. It is separate from Model so the cleanup can run.
type modelHandle struct {
	mu     sync.RWMutex // R: a Model method is using ptr; W: Close
	ptr    uintptr
	closed bool
	refs   atomic.Int32 // 1 for the open Model + 1 per open Session
}

func (h *modelHandle) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	h.release()
}

func (h *modelHandle) release() {
	if h.refs.Add(-1) == 0 {
		lib.modelFree(h.ptr)
		h.ptr = 0
	}
}

// use runs f with the C model pointer, or returns ErrClosed.
func (m *Model) use(f func(ptr uintptr) error) error {
	if m == nil || m.h == nil {
		return ErrClosed
	}
	m.h.mu.RLock()
	defer m.h.mu.RUnlock()
	if m.h.closed {
		return ErrClosed
	}
	return f(m.h.ptr)
}

// Open loads a GGUF model file (loading libzerfoo first if needed).
func Open(path string, opts ...ModelOption) (*Model, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	var p cModelParams
	lib.modelInit(&p, unsafe.Sizeof(p))
	for _, o := range opts {
		o(&p)
	}
	cpath := cstr(path)
	var ptr uintptr
	err := call("open", func() int32 { return lib.modelLoad(&cpath[0], &p, &ptr) })
	runtime.KeepAlive(cpath)
	if e, ok := err.(*Error); ok && !strings.Contains(e.Message, path) {
		e.Op = fmt.Sprintf("open %q", path) // make sure the message names the file
	}
	if err != nil {
		return nil, err
	}
	h := &modelHandle{ptr: ptr}
	h.refs.Store(1)
	m := &Model{h: h}
	m.cleanup = runtime.AddCleanup(m, (*modelHandle).close, h)
	return m, nil
}

// Close releases the model. It is idempotent; open sessions stay usable until closed.
func (m *Model) Close() error {
	if m == nil || m.h == nil {
		return nil
	}
	m.cleanup.Stop()
	m.h.close()
	return nil
}

// Info describes a loaded model (zf_model_summary).
type Info struct {
	Backend      Device // DeviceCPU or DeviceCUDA
	Architecture string // e.g. "llama", "gemma3"
	Name         string
	Quant        string // dominant weight type, e.g. "Q4_K"
	NParams      uint64
	FileSize     uint64
	NCtxTrain    int
	NVocab       int
	NLayer       int
	NEmbd        int
	NHead        int
	NHeadKV      int
	TokenBOS     int32 // -1 if none
	TokenEOS     int32
	TokenEOT     int32
	NTensors     int
	FIM          FIMTokens // fill-in-the-middle tokens
}

// FIMTokens are a model's fill-in-the-middle token ids, -1 where absent: from the GGUF's
// tokenizer.ggml.fim_*_token_id keys or found by their text ("<|fim_prefix|>", "<PRE>", ...).
// A prompt Pre prefix Suf suffix Mid asks for the middle; Rep and Sep frame repository files.
type FIMTokens struct {
	Pre, Suf, Mid, Pad, Rep, Sep int32
}

// HasInfill reports whether the model has the prefix, suffix and middle tokens.
func (f FIMTokens) HasInfill() bool { return f.Pre >= 0 && f.Suf >= 0 && f.Mid >= 0 }

// Info returns facts about the model.
func (m *Model) Info() (Info, error) {
	var s cModelSummary
	s.structSize = uint32(unsafe.Sizeof(s))
	err := m.use(func(ptr uintptr) error {
		return call("model info", func() int32 { return lib.modelInfo(ptr, &s) })
	})
	if err != nil {
		return Info{}, err
	}
	// The strings live as long as the model; copy them while it is held open.
	return Info{
		Backend: Device(s.backend), Architecture: goString(s.architecture), Name: goString(s.name),
		Quant: goString(s.quant), NParams: s.nParams, FileSize: s.fileSize,
		NCtxTrain: int(s.nCtxTrain), NVocab: int(s.nVocab), NLayer: int(s.nLayer), NEmbd: int(s.nEmbd),
		NHead: int(s.nHead), NHeadKV: int(s.nHeadKV), TokenBOS: s.tokenBOS, TokenEOS: s.tokenEOS,
		TokenEOT: s.tokenEOT, NTensors: int(s.nTensors), FIM: fimTokens(&s),
	}, nil
}

// fimTokens reads the FIM ids; a library older than the fields fills a smaller struct (none).
func fimTokens(s *cModelSummary) FIMTokens {
	if uintptr(s.structSize) < unsafe.Offsetof(s.tokenFIMSep)+4 {
		return FIMTokens{-1, -1, -1, -1, -1, -1}
	}
	return FIMTokens{s.tokenFIMPre, s.tokenFIMSuf, s.tokenFIMMid, s.tokenFIMPad, s.tokenFIMRep, s.tokenFIMSep}
}

// CacheInfo holds the counters of the model's prefix cache (zf_cache_info); see
// WithPrefixCacheMiB.
type CacheInfo struct {
	BlockTokens   int    // tokens per cached block (64); 0 when the cache is off
	CapacityBytes uint64 // the bound (WithPrefixCacheMiB)
	Bytes         uint64 // KV bytes held now
	Blocks        uint64 // blocks held now (each once, however many sessions used it)
	HitTokens     uint64 // prompt tokens copied from the cache instead of evaluated
	StoredBlocks  uint64 // blocks stored since load
	EvictedBlocks uint64 // blocks dropped for the bound since load
	MappedBlocks  uint64 // block mappings alive: sessions reading a cached block in place (n sessions: n)
}

// CacheInfo returns the prefix cache's counters now.
func (m *Model) CacheInfo() (CacheInfo, error) {
	var c cCacheInfo
	c.structSize = uint32(unsafe.Sizeof(c))
	err := m.use(func(ptr uintptr) error {
		return call("model cache info", func() int32 { return lib.modelCacheInfo(ptr, &c) })
	})
	if err != nil {
		return CacheInfo{}, err
	}
	return CacheInfo{
		BlockTokens: int(c.blockTokens), CapacityBytes: c.capacityBytes, Bytes: c.bytes,
		Blocks: c.blocks, HitTokens: c.hitTokens, StoredBlocks: c.storedBlocks,
		EvictedBlocks: c.evictedBlocks, MappedBlocks: c.mappedBlocks,
	}, nil
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Meta returns any GGUF metadata value as text; ErrNotFound if the key does not exist.
func (m *Model) Meta(key string) (string, error) {
	var out string
	err := m.use(func(ptr uintptr) (err error) {
		ckey := cstr(key)
		out, err = fetchString(fmt.Sprintf("meta %q", key), func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.modelMeta(ptr, &ckey[0], buf, cap, needed)
		})
		runtime.KeepAlive(ckey)
		return err
	})
	return out, err
}

// CheckConstraint compiles a constraint of the given kind for the model's vocabulary and
// discards it (zf_constraint_check): nil if WithConstraint(kind, text) would be accepted,
// ErrInvalidArgument with the compiler's message for an invalid constraint or an unknown kind,
// ErrUnsupported for a library built without constraints. The first constraint on a model
// builds llguidance's view of its vocabulary (kept with the model). Safe for concurrent use.
func (m *Model) CheckConstraint(kind ConstraintKind, text string) error {
	return m.use(func(ptr uintptr) error {
		c := cstr(text)
		defer runtime.KeepAlive(c)
		return call("constraint check", func() int32 { return lib.constraintCheck(ptr, int32(kind), &c[0]) })
	})
}

// TokenizeFlag modifies Tokenize.
type TokenizeFlag uint32

const (
	AddSpecial   TokenizeFlag = 0x1 // add BOS/EOS as the model's metadata asks
	ParseSpecial TokenizeFlag = 0x2 // match special-token text such as "<eos>" as tokens
)

// Tokenize converts UTF-8 text to token ids.
func (m *Model) Tokenize(text string, flags TokenizeFlag) ([]int32, error) {
	var toks []int32
	err := m.use(func(ptr uintptr) error {
		ctext := cstr(text)
		defer runtime.KeepAlive(ctext)
		toks = make([]int32, len(text)+4)
		for {
			var n uintptr
			err := call("tokenize", func() int32 {
				return lib.tokenize(ptr, &ctext[0], uintptr(len(text)), uint32(flags), &toks[0], uintptr(len(toks)), &n)
			})
			switch {
			case err == nil:
				toks = toks[:n]
				return nil
			case errors.Is(err, ErrBufferTooSmall) && n > uintptr(len(toks)):
				toks = make([]int32, n)
			default:
				return err
			}
		}
	})
	return toks, err
}

// Detokenize converts token ids to text (control tokens are skipped).
func (m *Model) Detokenize(tokens []int32) (string, error) { return m.detokenize(tokens, 0) }

// TokenText returns the text of one token with control tokens rendered (e.g. "<bos>").
func (m *Model) TokenText(token int32) (string, error) { return m.detokenize([]int32{token}, 0x2) }

func (m *Model) detokenize(tokens []int32, flags uint32) (string, error) {
	var out string
	err := m.use(func(ptr uintptr) (err error) {
		var first *int32
		if len(tokens) > 0 {
			first = &tokens[0]
		}
		out, err = fetchString("detokenize", func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.detokenize(ptr, first, uintptr(len(tokens)), flags, buf, cap, needed)
		})
		runtime.KeepAlive(tokens)
		return err
	})
	return out, err
}

// Message is one chat turn. Role is "system", "user" or "assistant".
type Message struct {
	Role    string
	Content string
}

// ChatTemplate renders messages with the model's chat template; addAssistant appends the
// prefix that opens the assistant's turn.
func (m *Model) ChatTemplate(msgs []Message, addAssistant bool) (string, error) {
	var out string
	err := m.use(func(ptr uintptr) (err error) {
		strs := make([][]byte, 0, 2*len(msgs)) // keeps the C strings alive
		cmsgs := make([]cChatMessage, len(msgs)+1)
		for i, msg := range msgs {
			r, c := cstr(msg.Role), cstr(msg.Content)
			strs = append(strs, r, c)
			cmsgs[i] = cChatMessage{role: &r[0], content: &c[0]}
		}
		var flags uint32
		if addAssistant {
			flags = 0x1
		}
		out, err = fetchString("chat template", func(buf *byte, cap uintptr, needed *uintptr) int32 {
			return lib.applyTemplate(ptr, &cmsgs[0], uintptr(len(msgs)), flags, buf, cap, needed)
		})
		runtime.KeepAlive(strs)
		runtime.KeepAlive(cmsgs)
		return err
	})
	return out, err
}

// Chat is a one-shot convenience: it opens a session (see WithSession), renders msgs with the
// chat template (assistant prefix added) and generates the reply.
func (m *Model) Chat(ctx context.Context, msgs []Message, opts ...GenOption) (Result, error) {
	prompt, err := m.ChatTemplate(msgs, true)
	if err != nil {
		return Result{}, err
	}
	var g genConfig
	for _, o := range opts {
		o(&g)
	}
	s, err := m.NewSession(g.session...)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	// Templates that spell out BOS themselves must not get a second one.
	if info, err := m.Info(); err == nil && info.TokenBOS >= 0 {
		if bos, err := m.TokenText(info.TokenBOS); err == nil && bos != "" && strings.HasPrefix(prompt, bos) {
			opts = append(opts, WithNoSpecial())
		}
	}
	return s.Generate(ctx, prompt, opts...)
}

// embedParams builds the C embed params from opts.
func embedParams(opts []EmbedOption) cEmbedParams {
	var p cEmbedParams
	lib.embedInit(&p, unsafe.Sizeof(p))
	for _, o := range opts {
		o(&p)
	}
	return p
}

// EmbedDimension returns the values per input that Embed returns with these options
// (zf_embed_dimension): the hidden size (or WithDimensions), or for PoolingRank the number of
// classifier outputs. ErrUnsupported for PoolingNone or rank pooling without a classification
// head; ErrInvalidArgument for a bad option. Safe for concurrent use.
func (m *Model) EmbedDimension(opts ...EmbedOption) (int, error) {
	var dim uintptr
	err := m.use(func(ptr uintptr) error {
		p := embedParams(opts)
		return call("embed dimension", func() int32 { return lib.embedDimension(ptr, &p, &dim) })
	})
	return int(dim), err
}

// Embed returns one pooled vector per text (zf_embed), L2-normalized unless WithNoNormalize.
// Each text is tokenized with the model's special tokens added; the texts run batched, and a
// text's vector does not depend on the others in the call. A generative model is pooled from its
// last token's state by default. An empty list, a text that gives no tokens or is longer than the
// training context, or a bad option is ErrInvalidArgument; CPU engine only. Safe for concurrent use.
func (m *Model) Embed(texts []string, opts ...EmbedOption) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, newError("embed", ErrInvalidArgument.Status, "no texts")
	}
	bufs := make([][]byte, len(texts))
	ptrs := make([]*byte, len(texts))
	lens := make([]uintptr, len(texts))
	for i, t := range texts {
		bufs[i] = cstr(t)
		ptrs[i], lens[i] = &bufs[i][0], uintptr(len(t))
	}
	var out [][]float32
	err := m.use(func(ptr uintptr) error {
		p := embedParams(opts)
		var err error
		out, err = embedInto(ptr, &p, len(texts), "embed", func(o *float32, cap uintptr, needed *uintptr) int32 {
			return lib.embed(ptr, &p, &ptrs[0], &lens[0], uintptr(len(texts)), o, cap, needed)
		})
		runtime.KeepAlive(bufs)
		runtime.KeepAlive(ptrs)
		runtime.KeepAlive(lens)
		return err
	})
	return out, err
}

// EmbedTokens is Embed for inputs already tokenized (nothing is added to them; each at least
// one token). A token id outside the vocabulary is ErrInvalidArgument.
func (m *Model) EmbedTokens(inputs [][]int32, opts ...EmbedOption) ([][]float32, error) {
	if len(inputs) == 0 {
		return nil, newError("embed tokens", ErrInvalidArgument.Status, "no inputs")
	}
	ptrs := make([]*int32, len(inputs))
	lens := make([]uintptr, len(inputs))
	for i, t := range inputs {
		if len(t) == 0 {
			return nil, newError("embed tokens", ErrInvalidArgument.Status, fmt.Sprintf("input %d has no tokens", i))
		}
		ptrs[i], lens[i] = &t[0], uintptr(len(t))
	}
	var out [][]float32
	err := m.use(func(ptr uintptr) error {
		p := embedParams(opts)
		var err error
		out, err = embedInto(ptr, &p, len(inputs), "embed tokens", func(o *float32, cap uintptr, needed *uintptr) int32 {
			return lib.embedTokens(ptr, &p, &ptrs[0], &lens[0], uintptr(len(inputs)), o, cap, needed)
		})
		runtime.KeepAlive(inputs)
		runtime.KeepAlive(ptrs)
		runtime.KeepAlive(lens)
		return err
	})
	return out, err
}

// embedInto sizes the output with zf_embed_dimension, runs f once and splits the floats.
func embedInto(ptr uintptr, p *cEmbedParams, n int, op string, f func(o *float32, cap uintptr, needed *uintptr) int32) ([][]float32, error) {
	var dim uintptr
	if err := call(op, func() int32 { return lib.embedDimension(ptr, p, &dim) }); err != nil {
		return nil, err
	}
	flat := make([]float32, uintptr(n)*dim)
	var needed uintptr
	var o *float32
	if len(flat) > 0 {
		o = &flat[0]
	}
	if err := call(op, func() int32 { return f(o, uintptr(len(flat)), &needed) }); err != nil {
		return nil, err
	}
	runtime.KeepAlive(flat)
	out := make([][]float32, n)
	d := int(dim)
	for i := range out {
		out[i] = flat[i*d : (i+1)*d : (i+1)*d]
	}
	return out, nil
}

// Rerank scores documents against query with a reranker (zf_rerank; a model with a
// classification head such as bge-reranker), one score per document in order, unnormalized
// (higher = more relevant). ErrUnsupported for a model without a classification head. Only
// WithPooling(PoolingDefault or PoolingRank) and WithEmbedThreads apply. No documents gives
// an empty slice. Safe for concurrent use.
func (m *Model) Rerank(query string, documents []string, opts ...EmbedOption) ([]float32, error) {
	scores := make([]float32, len(documents))
	bufs := make([][]byte, len(documents))
	ptrs := make([]*byte, len(documents)+1)
	lens := make([]uintptr, len(documents)+1)
	for i, d := range documents {
		bufs[i] = cstr(d)
		ptrs[i], lens[i] = &bufs[i][0], uintptr(len(d))
	}
	q := cstr(query)
	err := m.use(func(ptr uintptr) error {
		p := embedParams(opts)
		var s *float32
		if len(scores) > 0 {
			s = &scores[0]
		}
		err := call("rerank", func() int32 {
			return lib.rerank(ptr, &p, &q[0], uintptr(len(query)), &ptrs[0], &lens[0], uintptr(len(documents)), s)
		})
		runtime.KeepAlive(bufs)
		runtime.KeepAlive(ptrs)
		runtime.KeepAlive(lens)
		runtime.KeepAlive(q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return scores, nil
}
