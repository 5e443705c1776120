// Reads the common `<arch>.*` hyperparameters, then lets the architecture's setup add its own.
#include "model/config.h"

#include <cmath>
#include <string>

#include "model/registry.h"

namespace zf::model {
namespace {

std::string Key(const std::string& arch, const char* suffix) { return arch + "." + suffix; }

Status RequireI32(const gguf::GgufFile& f, const std::string& key, int32_t* out) {
  Status s = f.GetI32(key, out);
  if (s.code() == Code::kNotFound) return FormatError("missing required metadata key '" + key + "'");
  return s;
}

// Optional key: keeps *out when absent; errors only on a wrong type.
template <typename T, typename Getter>
Status Optional(const gguf::GgufFile& f, const std::string& key, T* out, Getter get) {
  Status s = (f.*get)(key, out);
  if (s.code() == Code::kNotFound) return Status::Ok();
  return s;
}

}  // namespace

Status LoadConfig(const gguf::GgufFile& f, ModelConfig* c) {
  std::string_view arch_sv;
  Status s = f.GetString("general.architecture", &arch_sv);
  if (s.code() == Code::kNotFound) return FormatError("missing required metadata key 'general.architecture'");
  ZF_RETURN_IF_ERROR(s);
  c->arch = std::string(arch_sv);
  const ArchEntry* entry = FindArch(c->arch);
  if (entry == nullptr) {
    std::string list;
    for (const char* n : SupportedArchs()) list += std::string(list.empty() ? "" : ", ") + n;
    return Unsupported("unsupported architecture '" + c->arch + "' (supported: " + list + ")");
  }
  const std::string& a = c->arch;
  ZF_RETURN_IF_ERROR(RequireI32(f, Key(a, "embedding_length"), &c->n_embd));
  ZF_RETURN_IF_ERROR(RequireI32(f, Key(a, "block_count"), &c->n_layer));
  ZF_RETURN_IF_ERROR(RequireI32(f, Key(a, "feed_forward_length"), &c->n_ff));
  ZF_RETURN_IF_ERROR(RequireI32(f, Key(a, "attention.head_count"), &c->n_head));
  c->n_ctx_train = 2048;
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "context_length"), &c->n_ctx_train, &gguf::GgufFile::GetI32));
  c->n_head_kv = c->n_head;
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "attention.head_count_kv"), &c->n_head_kv, &gguf::GgufFile::GetI32));
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "attention.layer_norm_rms_epsilon"), &c->norm_eps, &gguf::GgufFile::GetF32));
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "rope.freq_base"), &c->rope_base, &gguf::GgufFile::GetF32));

  if (c->n_embd <= 0 || c->n_layer <= 0 || c->n_ff <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 ||
      c->n_ctx_train <= 0 || c->n_head % c->n_head_kv != 0 || c->n_layer > 4096 || c->n_head > 4096) {
    return FormatError("inconsistent hyperparameters for '" + a + "': n_embd=" + std::to_string(c->n_embd) +
                       " n_layer=" + std::to_string(c->n_layer) + " n_ff=" + std::to_string(c->n_ff) +
                       " n_head=" + std::to_string(c->n_head) + " n_head_kv=" + std::to_string(c->n_head_kv) +
                       " context_length=" + std::to_string(c->n_ctx_train));
  }
  c->head_dim_k = c->n_embd / c->n_head;
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "attention.key_length"), &c->head_dim_k, &gguf::GgufFile::GetI32));
  c->head_dim_v = c->head_dim_k;
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "attention.value_length"), &c->head_dim_v, &gguf::GgufFile::GetI32));
  c->n_rot = c->head_dim_k;
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "rope.dimension_count"), &c->n_rot, &gguf::GgufFile::GetI32));
  if (c->head_dim_k <= 0 || c->head_dim_v <= 0 || c->head_dim_k > 1024 || c->head_dim_v > 1024 ||
      c->n_rot <= 0 || c->n_rot > c->head_dim_k || c->n_rot % 2 != 0) {
    return FormatError("inconsistent head sizes for '" + a + "': key_length=" + std::to_string(c->head_dim_k) +
                       " value_length=" + std::to_string(c->head_dim_v) + " rope.dimension_count=" +
                       std::to_string(c->n_rot));
  }

  // Linear rope scaling ("rope.scaling.type" = linear, factor F => positions / F).
  std::string_view scaling;
  if (f.GetString(Key(a, "rope.scaling.type"), &scaling).ok() && scaling == "linear") {
    float factor = 1.0f;
    ZF_RETURN_IF_ERROR(Optional(f, Key(a, "rope.scaling.factor"), &factor, &gguf::GgufFile::GetF32));
    if (!(factor > 0.0f)) return FormatError("rope.scaling.factor must be > 0");
    c->rope_freq_scale = 1.0f / factor;
  }
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "final_logit_softcapping"), &c->final_logit_softcap, &gguf::GgufFile::GetF32));
  ZF_RETURN_IF_ERROR(Optional(f, Key(a, "attn_logit_softcapping"), &c->attn_logit_softcap, &gguf::GgufFile::GetF32));

  c->layer_is_local.assign(static_cast<size_t>(c->n_layer), 0);
  ZF_RETURN_IF_ERROR(entry->setup(f, c));

  // Vocabulary size: the token list is authoritative.
  const gguf::Value* tokens = f.Find("tokenizer.ggml.tokens");
  if (tokens != nullptr && tokens->type == gguf::ValueType::ARRAY) c->n_vocab = static_cast<int32_t>(tokens->count);
  if (c->n_vocab <= 0) return FormatError("missing or empty 'tokenizer.ggml.tokens'");
  return Status::Ok();
}

}  // namespace zf::model
