package zerfoo

// SessionOption configures NewSession.
type SessionOption func(*cSessionParams)

// WithContextSize sets the context length in tokens (0 = min(training context, 4096)).
func WithContextSize(n int) SessionOption { return func(p *cSessionParams) { p.nCtx = int32(n) } }

// WithThreads sets the CPU threads for this session (0 = the model's default).
func WithThreads(n int) SessionOption { return func(p *cSessionParams) { p.nThreads = int32(n) } }

// KVType is the KV-cache element type.
type KVType int32

const (
	KVF32 KVType = 0
	KVF16 KVType = 1 // default
)

// WithKVType sets the KV-cache element type.
func WithKVType(t KVType) SessionOption { return func(p *cSessionParams) { p.kvType = int32(t) } }

// GenOption configures Generate, Stream and Chat. Unset fields keep zf_generate_params_init's
// defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, max_tokens 256, random seed).
type GenOption func(*genConfig)

type genConfig struct {
	set     []func(*cGenParams)
	stop    []string
	session []SessionOption // Model.Chat only
}

func setter(f func(*cGenParams)) GenOption {
	return func(g *genConfig) { g.set = append(g.set, f) }
}

// WithTemperature sets the sampling temperature; 0 is greedy.
func WithTemperature(t float32) GenOption { return setter(func(p *cGenParams) { p.temperature = t }) }

// WithTopK keeps the k most likely tokens (0 = off).
func WithTopK(k int) GenOption { return setter(func(p *cGenParams) { p.topK = int32(k) }) }

// WithTopP sets the nucleus threshold (1 = off).
func WithTopP(v float32) GenOption { return setter(func(p *cGenParams) { p.topP = v }) }

// WithMinP drops tokens below v * p(max) (0 = off).
func WithMinP(v float32) GenOption { return setter(func(p *cGenParams) { p.minP = v }) }

// WithRepeatPenalty penalizes repeats when > 1 (1 = off).
func WithRepeatPenalty(v float32) GenOption {
	return setter(func(p *cGenParams) { p.repeatPenalty = v })
}

// WithRepeatLastN sets the window for the repeat penalty.
func WithRepeatLastN(n int) GenOption {
	return setter(func(p *cGenParams) { p.repeatLastN = int32(n) })
}

// WithSeed fixes the RNG seed (the default is random).
func WithSeed(seed uint64) GenOption { return setter(func(p *cGenParams) { p.seed = seed }) }

// WithMaxTokens caps the generated tokens (< 0 = until the context is full).
func WithMaxTokens(n int) GenOption { return setter(func(p *cGenParams) { p.maxTokens = int32(n) }) }

// WithStop adds stop strings; generation ends before any of them and they are not emitted.
func WithStop(stop ...string) GenOption {
	return func(g *genConfig) { g.stop = append(g.stop, stop...) }
}

// WithNoSpecial does not add BOS/special tokens to the prompt.
func WithNoSpecial() GenOption { return setter(func(p *cGenParams) { p.flags |= 0x1 }) }

// WithNoParseSpecial treats special-token text in the prompt as plain text.
func WithNoParseSpecial() GenOption { return setter(func(p *cGenParams) { p.flags |= 0x2 }) }

// WithIgnoreEOS keeps generating past EOS/EOT.
func WithIgnoreEOS() GenOption { return setter(func(p *cGenParams) { p.flags |= 0x4 }) }

// MaxLogprobs is the most alternatives WithLogprobs may ask for (ZF_MAX_LOGPROBS).
const MaxLogprobs = 20

// WithLogprobs reports each generated token's log-probability and the n most likely
// alternatives (0 = off, the default; at most MaxLogprobs): in Result.Logprobs for Generate and
// Chat, and in Piece.Logprobs for StreamPieces. The values are the log-softmax of the model's raw
// logits (before penalties, temperature and the top-k/top-p/min-p filters).
func WithLogprobs(n int) GenOption { return setter(func(p *cGenParams) { p.nLogprobs = int32(n) }) }

// WithSession passes session options to the session Model.Chat creates (ignored elsewhere).
func WithSession(opts ...SessionOption) GenOption {
	return func(g *genConfig) { g.session = append(g.session, opts...) }
}
