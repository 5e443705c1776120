// Embedding passes: inputs packed into steps of at most kStepTokens rows, one KV cache per
// input, pooled on the host.
#include "runtime/embedder.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "model/forward.h"
#include "model/forward_pool.h"

namespace zf::rt {
namespace {

using model::Pooling;

// Rows per batched step (a longer input runs alone in a step of its own length) and inputs
// per step: the prefill GEMM's sweet spot, and a bound on the KV caches held at once.
constexpr int32_t kStepTokens = 512;
constexpr int32_t kStepInputs = 64;
// An input's vector must not depend on what else is in its call. The CPU engine multiplies
// steps of fewer than 8 rows row by row (another activation quantization than its prefill GEMM,
// which then differs visibly on 4-bit weights); a shorter step is padded with a dummy input up
// to this many rows, so every step takes the GEMM, whose rows do not depend on one another.
constexpr int32_t kMinStepRows = 8;

// One input's vector from its rows h [n, E] of the final states.
void Pool(Pooling p, const float* h, int32_t n, int32_t E, float* out) {
  if (p == Pooling::kMean) {
    // Summed in double: the reference's mean is a matrix product accumulating in F32 per block,
    // so this is at least as close to the exact mean.
    for (int32_t j = 0; j < E; ++j) {
      double s = 0.0;
      for (int32_t t = 0; t < n; ++t) s += h[int64_t{t} * E + j];
      out[j] = float(s / n);
    }
    return;
  }
  const float* row = h + int64_t{p == Pooling::kLast ? n - 1 : 0} * E;
  std::copy(row, row + E, out);
}

// The reference's L2 normalization (sum of squares in double; a zero vector stays zero).
void Normalize(float* v, int32_t n) {
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += double(v[i]) * double(v[i]);
  sum = std::sqrt(sum);
  const float scale = sum > 0.0 ? float(1.0 / sum) : 0.0f;
  for (int32_t i = 0; i < n; ++i) v[i] *= scale;
}

}  // namespace

Pooling ResolvePooling(const model::Model& model, Pooling requested) {
  if (requested != Pooling::kUnspecified) return requested;
  const Pooling file = model.desc().pooling;
  return file == Pooling::kUnspecified ? Pooling::kLast : file;
}

int32_t MaxEmbedTokens(const model::Model& model) { return model.desc().n_ctx_train; }

Status EmbedDimension(const model::Model& model, const EmbedOptions& o, int32_t* dim) {
  const model::ModelDesc& d = model.desc();
  const Pooling p = ResolvePooling(model, o.pooling);
  if (p == Pooling::kNone) {
    return Unsupported("pooling 'none' gives one vector per token, not one per input; choose mean, cls, last or rank" +
                       std::string(d.pooling == Pooling::kNone ? " (the file's pooling_type is none)" : ""));
  }
  if (p < Pooling::kNone || p > Pooling::kRank) {
    return InvalidArgument("unknown pooling " + std::to_string(int32_t(p)) + " (known: -1 default, 0 none, 1 mean, "
                           "2 cls, 3 last, 4 rank)");
  }
  if (o.dimensions < 0 || o.dimensions > d.n_embd) {
    return InvalidArgument("dimensions must be 0 (all) or 1.." + std::to_string(d.n_embd) + ", got " +
                           std::to_string(o.dimensions));
  }
  if (p == Pooling::kRank) {
    if (model.vocab_only() || model.weights()[model::GlobalRole::kClsOut] == nullptr) {
      return Unsupported("pooling 'rank' needs a classification head (cls.output.weight), which '" + d.arch +
                         "' model '" + model.name() + "' does not have");
    }
    if (o.dimensions != 0) return InvalidArgument("dimensions applies to embeddings, not to rank scores");
    *dim = d.n_cls_out;
    return Status::Ok();
  }
  *dim = o.dimensions > 0 ? o.dimensions : d.n_embd;
  return Status::Ok();
}

Status Embed(const model::Model& model, const std::vector<std::vector<int32_t>>& inputs, const EmbedOptions& o,
             float* out) {
  if (model.vocab_only()) return InvalidArgument("the model was loaded with ZF_MODEL_VOCAB_ONLY and has no weights");
  if (model.device() == model::Device::kCuda) {
    return Unsupported("embeddings run on the CPU engine in this version; load the model with ZF_DEVICE_CPU");
  }
  if (o.n_threads < 0) return InvalidArgument("n_threads must be >= 0, got " + std::to_string(o.n_threads));
  int32_t dim = 0;
  ZF_RETURN_IF_ERROR(EmbedDimension(model, o, &dim));
  const Pooling pooling = ResolvePooling(model, o.pooling);
  const model::ModelDesc& d = model.desc();
  const int32_t max_len = MaxEmbedTokens(model);
  int32_t longest = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t>& in = inputs[i];
    if (in.empty()) return InvalidArgument("input " + std::to_string(i) + " has no tokens");
    if (in.size() > size_t(max_len)) {
      return InvalidArgument("input " + std::to_string(i) + " has " + std::to_string(in.size()) +
                             " tokens, more than the model's " + std::to_string(max_len));
    }
    for (size_t t = 0; t < in.size(); ++t) {
      if (in[t] < 0 || in[t] >= d.n_vocab) {
        return InvalidArgument("input " + std::to_string(i) + ": token id " + std::to_string(in[t]) + " at index " +
                               std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(d.n_vocab) + ")");
      }
    }
    longest = std::max(longest, int32_t(in.size()));
  }
  if (inputs.empty()) return Status::Ok();

  // The step's backend computes every product; each input's rows are a KV cache of its own.
  const int32_t threads = std::min(o.n_threads > 0 ? o.n_threads : model.default_threads(), 256);
  const int32_t step_tokens = std::max(kStepTokens, longest);
  const int32_t step_inputs = int32_t(std::min<size_t>(size_t(kStepInputs), inputs.size()));
  // The steps run on a context of the model's pool, made for embedding steps: up to step_tokens
  // rows (a context's size rounded up to whole kStepTokens, so that calls with inputs of many
  // lengths share a few contexts; the rows a step packs do not depend on it) of up to
  // kStepInputs inputs and a padding one. Its inputs attend at once, one per thread of the pool
  // the products run on, each thread on a one-thread backend (its scratch), when the call uses
  // the model's thread count (the pool its sessions share); a call asking for another count
  // attends one input after the other on all of the step's threads.
  model::ForwardPool::Lease ctx;
  const int32_t ctx_tokens = (step_tokens + kStepTokens - 1) / kStepTokens * kStepTokens;
  ZF_RETURN_IF_ERROR(model.forwards()->Acquire(
      model::ForwardPool::Key{threads, false, ctx_tokens, kStepInputs + 1, /*parallel_seqs=*/true}, &ctx));
  engine::Backend* be = &ctx.backend();
  if (!be->HostActivations()) return Unsupported("embeddings need an engine computing in host memory");
  model::Forward& fwd = ctx.forward();
  const float* rope = model::Forward::RopeFactors(model, longest);
  // A step of one input attends on the step's own threads, in a cache for the longest input.
  std::unique_ptr<engine::KvCache> step_kv;
  ZF_RETURN_IF_ERROR(be->CreateKv(d.NKvLayers(), longest, d.MaxKWidth(), d.MaxVWidth(), engine::KvType::kF16, &step_kv));
  // Caches of the inputs of a step, each sized to its input when made. The next step's input i
  // reuses cache i when it fits and is at most twice its length (an input writes its rows
  // before it reads them and attends over its own positions only), instead of faulting fresh
  // zero pages in at every step: a step holds at most 2 * step_tokens rows of KV in all,
  // whatever the inputs' lengths.
  std::vector<std::unique_ptr<engine::KvCache>> kv;
  std::vector<int32_t> kv_rows;  // positions each cache holds
  const int32_t E = d.n_embd;
  std::vector<int32_t> tokens;
  std::vector<model::Forward::Seq> seqs;
  std::vector<model::RecurrentState> states;  // per input of a step (recurrent models)
  std::vector<float> hidden(size_t(step_tokens) * size_t(E));
  std::vector<float> pooled, scores;
  // The classifier reads each input's first state (its [CLS]), or its last when attention is
  // causal (a decoder reranker: the last row is the only one that has seen the whole pair).
  const Pooling rank_input = d.layers.back().attn.causal ? Pooling::kLast : Pooling::kCls;
  for (size_t first = 0; first < inputs.size();) {
    // The next step: inputs while their rows fit (at least one).
    tokens.clear();
    seqs.clear();
    size_t last = first;
    while (last < inputs.size() && seqs.size() < size_t(step_inputs) &&
           (seqs.empty() || tokens.size() + inputs[last].size() <= size_t(step_tokens))) {
      const std::vector<int32_t>& in = inputs[last];
      seqs.push_back({step_kv.get(), 0, int32_t(in.size()), nullptr, nullptr, rope, nullptr});
      tokens.insert(tokens.end(), in.begin(), in.end());
      ++last;
    }
    const size_t n_seq = seqs.size();  // the real inputs; a padding one may follow
    if (tokens.size() < size_t(kMinStepRows)) {
      const int32_t pad = kMinStepRows - int32_t(tokens.size());
      seqs.push_back({step_kv.get(), 0, pad, nullptr, nullptr, rope, nullptr});
      tokens.insert(tokens.end(), size_t(pad), 0);
    }
    states.resize(seqs.size(), model::RecurrentState(d));  // each input from the zero state
    for (size_t i = 0; i < seqs.size(); ++i) {
      states[i].Clear();
      if (!states[i].empty()) seqs[i].state = &states[i];
    }
    if (seqs.size() > 1) {
      if (kv.size() < seqs.size()) {
        kv.resize(seqs.size());
        kv_rows.resize(seqs.size(), 0);
      }
      for (size_t i = 0; i < seqs.size(); ++i) {
        if (kv[i] == nullptr || kv_rows[i] < seqs[i].n || kv_rows[i] > 2 * seqs[i].n) {
          kv[i].reset();  // its memory first
          ZF_RETURN_IF_ERROR(
              be->CreateKv(d.NKvLayers(), seqs[i].n, d.MaxKWidth(), d.MaxVWidth(), engine::KvType::kF16, &kv[i]));
          kv_rows[i] = seqs[i].n;
        }
        seqs[i].kv = kv[i].get();
      }
    }
    fwd.RunHidden(tokens.data(), seqs.data(), int32_t(seqs.size()), hidden.data());
    ZF_RETURN_IF_ERROR(be->TakeError());
    // Pooled rows, padded to kMinStepRows so the products after pooling take the same kernels
    // whatever the number of inputs in the step.
    const size_t n_rows = std::max(n_seq, size_t(kMinStepRows));
    pooled.assign(n_rows * size_t(E), 0.0f);
    for (size_t i = 0, row = 0; i < n_seq; row += size_t(seqs[i].n), ++i) {
      Pool(pooling == Pooling::kRank ? rank_input : pooling, hidden.data() + row * size_t(E), seqs[i].n, E,
           pooled.data() + i * size_t(E));
    }
    if (pooling == Pooling::kRank) {
      scores.resize(n_rows * size_t(dim));
      fwd.ClassifierHead(pooled.data(), int32_t(n_rows), scores.data());
      std::copy(scores.begin(), scores.begin() + n_seq * size_t(dim), out + first * size_t(dim));
    } else {
      fwd.DenseOut(pooled.data(), int32_t(n_rows));
      for (size_t i = 0; i < n_seq; ++i) {
        float* v = out + (first + i) * size_t(dim);
        std::copy(pooled.begin() + i * size_t(E), pooled.begin() + i * size_t(E) + dim, v);
        if (o.normalize) Normalize(v, dim);
      }
    }
    first = last;
  }
  return Status::Ok();
}

Status FormatRerankPair(const model::Model& model, std::string_view query, std::string_view doc,
                        std::vector<int32_t>* out) {
  const tok::Tokenizer& t = model.tokenizer();
  out->clear();
  std::string_view tmpl;
  if (model.file().GetString("tokenizer.chat_template.rerank", &tmpl).ok()) {
    std::string prompt(tmpl);
    for (const auto& [key, value] : {std::pair<std::string_view, std::string_view>{"{query}", query}, {"{document}", doc}}) {
      for (size_t at = prompt.find(key); at != std::string::npos; at = prompt.find(key, at + value.size())) {
        prompt.replace(at, key.size(), value);
      }
    }
    return t.Encode(prompt, false, true, out);
  }
  std::vector<int32_t> q, d;
  ZF_RETURN_IF_ERROR(t.Encode(query, false, false, &q));
  ZF_RETURN_IF_ERROR(t.Encode(doc, false, false, &d));
  const int32_t eos = t.eos() >= 0 ? t.eos() : t.sep();
  if (t.add_bos() && t.bos() >= 0) out->push_back(t.bos());
  out->insert(out->end(), q.begin(), q.end());
  if (t.add_eos() && eos >= 0) out->push_back(eos);
  if (t.add_sep() && t.sep() >= 0) out->push_back(t.sep());
  out->insert(out->end(), d.begin(), d.end());
  if (t.add_eos() && eos >= 0) out->push_back(eos);
  return Status::Ok();
}

}  // namespace zf::rt
