// Embedding and reranking passes: token arrays in, one pooled vector (or classifier scores) per
// input out. Inputs are packed into batched steps (the prefill kernels over every input's rows
// at once), each input in one step from position 0 with its own KV cache, so non-causal
// attention sees exactly that input. Each call borrows a forward context made for embedding
// steps from the model's pool (model/forward_pool.h; calls at once get one each), so one model
// may serve any number of concurrent calls (thread-safe).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/model.h"

namespace zf::rt {

struct EmbedOptions {
  // kUnspecified: the file's `<arch>.pooling_type`, or kLast for a model without one (a
  // decoder: its last token's state is the only one that has seen the whole input).
  model::Pooling pooling = model::Pooling::kUnspecified;
  bool normalize = true;   // L2-normalize each vector (after truncation)
  int32_t dimensions = 0;  // > 0: keep the first `dimensions` values (Matryoshka), then normalize
  int32_t n_threads = 0;   // 0 = the model's default
};

// The pooling a call resolves to (kUnspecified replaced as EmbedOptions says).
model::Pooling ResolvePooling(const model::Model& model, model::Pooling requested);

// Values per input for these options: n_embd (or `dimensions`), n_cls_out for kRank.
// kUnsupported for pooling none (one vector per token, not per input), kRank on a model
// without a classification head; kInvalidArgument for dimensions outside [0, n_embd].
Status EmbedDimension(const model::Model& model, const EmbedOptions& o, int32_t* dim);

// Longest input accepted (absolute position tables end at the training context).
int32_t MaxEmbedTokens(const model::Model& model);

// Embeds every input into out[i * dim, (i + 1) * dim) (dim from EmbedDimension). kRank gives
// the classifier's scores (never normalized). kInvalidArgument for an empty input, a token
// outside the vocabulary or an input longer than MaxEmbedTokens (the message names its index);
// kUnsupported for a model the CPU engine does not run.
Status Embed(const model::Model& model, const std::vector<std::vector<int32_t>>& inputs, const EmbedOptions& o,
             float* out);

// A (query, document) pair as llama-server formats it for a reranker: the file's
// `tokenizer.chat_template.rerank` with {query} and {document} replaced (special text parsed),
// else BOS query EOS SEP document EOS, each special token where the vocabulary's add_* flag
// asks for it (EOS falling back to SEP). kInvalidUtf8 for malformed text.
Status FormatRerankPair(const model::Model& model, std::string_view query, std::string_view doc,
                        std::vector<int32_t>* out);

}  // namespace zf::rt
