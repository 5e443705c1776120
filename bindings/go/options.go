package zerfoo

import (
	"encoding/json"
	"strings"
)

// SessionOption configures NewSession.
type SessionOption func(*cSessionParams)

// WithContextSize sets the context length in tokens (0 = min(training context, 4096)).
func WithContextSize(n int) SessionOption { return func(p *cSessionParams) { p.nCtx = int32(n) } }

// WithThreads sets the CPU threads for this session (0 = the model's default).
func WithThreads(n int) SessionOption { return func(p *cSessionParams) { p.nThreads = int32(n) } }

// KVType is the KV-cache element type.
type KVType int32

const (
	KVF32  KVType = 0
	KVF16  KVType = 1 // default
	KVQ8_0 KVType = 2 // ggml's Q8_0 blocks (CPU engine; head sizes a multiple of 32)
	KVQ4_0 KVType = 3 // ggml's Q4_0 blocks (as KVQ8_0)
)

// WithKVType sets the KV-cache element type of K, and of V unless WithKVTypeV says otherwise.
func WithKVType(t KVType) SessionOption { return func(p *cSessionParams) { p.kvType = int32(t) } }

// WithKVTypeV sets V's KV-cache element type apart from K's (llama.cpp's -ctv).
func WithKVTypeV(t KVType) SessionOption { return func(p *cSessionParams) { p.kvTypeV = int32(t) } }

// WithFastPrefill evaluates prompts with the fastest kernels instead of the exact ones
// (ZF_SESSION_FAST_PREFILL). By default a session evaluates a prompt so that every position's
// logits are bit for bit the same however the prompt arrives (in one call, in pieces, one token
// at a time, after a prefix copied from the model's prefix cache, batched with other sessions).
// With this option prompts of 8 tokens or more use the multi-token kernels (faster prefill),
// whose results differ from the one-token path in the last bits; such a session neither reads
// nor fills the prefix cache (WithPrefixCacheMiB).
func WithFastPrefill() SessionOption { return func(p *cSessionParams) { p.flags |= 0x1 } }

// GenOption configures Generate, Stream and Chat. Unset fields keep zf_generate_params_init's
// defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, max_tokens 256, random seed).
type GenOption func(*genConfig)

type genConfig struct {
	set            []func(*cGenParams)
	stop           []string
	constraint     string
	constraintKind ConstraintKind
	trigger        string
	session        []SessionOption // Model.Chat only
	turn           turnConfig      // Session.ChatTurn and ChatTurnMessage only
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

// ConstraintKind is the kind of a constrained-decoding constraint (ZF_CONSTRAINT_*).
type ConstraintKind int32

const (
	ConstraintNone       ConstraintKind = 0 // ZF_CONSTRAINT_NONE: no constraint
	ConstraintJSONSchema ConstraintKind = 1 // ZF_CONSTRAINT_JSON_SCHEMA: a JSON schema (llguidance's subset)
	ConstraintRegex      ConstraintKind = 2 // ZF_CONSTRAINT_REGEX: a regular expression (Rust regex syntax) matching the whole output
	ConstraintChoice     ConstraintKind = 3 // ZF_CONSTRAINT_CHOICE: a non-empty JSON array of strings; the output is one of them
	ConstraintLark       ConstraintKind = 4 // ZF_CONSTRAINT_LARK: a Lark grammar (llguidance's dialect, `start` rule)
)

// WithConstraint constrains the generated text to what the constraint of the given kind accepts
// (constrained decoding, doc/constraints.md). The constraint is compiled before the prompt is
// evaluated: an invalid one is ErrInvalidArgument with the compiler's message and nothing is
// evaluated; a library built without constraints returns ErrUnsupported. When the text is
// complete the generation ends with StopEOS; StopMaxTokens (or a stop string, cancel, a full
// context) can still cut it short, so check Result.StopReason before parsing. The constraint
// covers this call only. The last constraint option given wins; ConstraintNone with "" clears it.
func WithConstraint(kind ConstraintKind, text string) GenOption {
	return func(g *genConfig) { g.constraintKind, g.constraint = kind, text }
}

// WithConstraintTrigger makes the constraint lazy (zf_generate_params.constraint_trigger): the
// output is free until trigger first appears in it, and from where it starts the rest must match
// the constraint (a tool call opened in free text: ChatToolGrammar gives the grammar and
// trigger). "" (default) applies the constraint from the first token.
func WithConstraintTrigger(trigger string) GenOption {
	return func(g *genConfig) { g.trigger = trigger }
}

// WithJSONSchema constrains the output to JSON matching schema (a JSON schema as text).
func WithJSONSchema(schema string) GenOption { return WithConstraint(ConstraintJSONSchema, schema) }

// WithRegex constrains the whole output to match re (Rust regex syntax; no ^/$ needed).
func WithRegex(re string) GenOption { return WithConstraint(ConstraintRegex, re) }

// WithChoice constrains the output to exactly one of choices (matched verbatim). No choices is
// ErrInvalidArgument when generating.
func WithChoice(choices ...string) GenOption {
	return WithConstraint(ConstraintChoice, choiceJSON(choices))
}

// WithLarkGrammar constrains the output to the Lark grammar g (llguidance's dialect, with a
// `start` rule; GBNF is not supported).
func WithLarkGrammar(g string) GenOption { return WithConstraint(ConstraintLark, g) }

// choiceJSON is the JSON array of strings ZF_CONSTRAINT_CHOICE takes.
func choiceJSON(choices []string) string {
	if choices == nil {
		choices = []string{}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(choices) // []string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// MaxDraft is the most tokens WithDraftMax may draft per step (ZF_MAX_DRAFT).
const MaxDraft = 16

// WithDraftMax turns on speculative decoding by prompt lookup (zf_generate_params.draft_max):
// at each step up to n tokens are drafted from the latest earlier occurrence of the text's last
// tokens in the prompt and output and verified in one pass; the output is token for token the
// output without it (greedy, and sampled with a seed). It pays off when the answer repeats the
// prompt (code edits, quotes, extraction). 0 (default) = off; at most MaxDraft. Ignored on
// sessions that cannot verify drafts (WithFastPrefill, the CUDA engine); on WithMaxBatch models
// a session's drafts are verified inside the shared decode steps.
// Result.NDrafted and Result.NAccepted report what it did.
func WithDraftMax(n int) GenOption { return setter(func(p *cGenParams) { p.draftMax = int32(n) }) }

// WithDraftMin skips drafting at a step when fewer than n tokens are found
// (zf_generate_params.draft_min; 0 = 1).
func WithDraftMin(n int) GenOption { return setter(func(p *cGenParams) { p.draftMin = int32(n) }) }

// Pooling is how an input's token states become one vector (ZF_POOLING_*).
type Pooling int32

const (
	PoolingDefault Pooling = -1 // ZF_POOLING_DEFAULT: the file's pooling_type; last-token pooling for a generative model
	PoolingNone    Pooling = 0  // ZF_POOLING_NONE: one vector per token (not supported by Embed)
	PoolingMean    Pooling = 1  // ZF_POOLING_MEAN: the mean of every token's state
	PoolingCLS     Pooling = 2  // ZF_POOLING_CLS: the first token's state ([CLS] of BERT models)
	PoolingLast    Pooling = 3  // ZF_POOLING_LAST: the last token's state
	PoolingRank    Pooling = 4  // ZF_POOLING_RANK: the classification head's outputs (rerankers), never normalized
)

// EmbedOption configures Embed, EmbedTokens, EmbedDimension and Rerank. Unset fields keep
// zf_embed_params_init's defaults (the model's pooling, L2 normalization, all dimensions).
type EmbedOption func(*cEmbedParams)

// WithPooling sets the pooling (default PoolingDefault).
func WithPooling(p Pooling) EmbedOption { return func(e *cEmbedParams) { e.pooling = int32(p) } }

// WithNoNormalize leaves vectors as pooled (ZF_EMBED_NO_NORMALIZE; default: L2-normalized).
func WithNoNormalize() EmbedOption { return func(e *cEmbedParams) { e.flags |= 0x1 } }

// WithDimensions keeps the first n values of each vector, then normalizes (Matryoshka-trained
// models; 0 = the model's hidden size, the default).
func WithDimensions(n int) EmbedOption { return func(e *cEmbedParams) { e.dimensions = int32(n) } }

// WithEmbedThreads sets the CPU threads of the call (0 = the model's thread count).
func WithEmbedThreads(n int) EmbedOption { return func(e *cEmbedParams) { e.nThreads = int32(n) } }

// WithSession passes session options to the session Model.Chat creates (ignored elsewhere).
func WithSession(opts ...SessionOption) GenOption {
	return func(g *genConfig) { g.session = append(g.session, opts...) }
}
