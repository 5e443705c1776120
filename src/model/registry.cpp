// The table of supported architectures (explicit, so static linking cannot drop an entry).
#include "model/registry.h"

namespace zf::model {
namespace {

constexpr ArchEntry kArchs[] = {
    {"llama", BuildLlama},
    {"mistral", BuildLlama},
    {"mistral3", BuildMistral3},
    {"gemma2", BuildGemma2},
    {"gemma3", BuildGemma3},
    {"gemma-embedding", BuildGemmaEmbedding},
    {"gemma4", BuildGemma4},
    {"qwen2", BuildQwen2},
    {"qwen3", BuildQwen3},
    {"qwen3moe", BuildQwen3Moe},
    {"qwen2vl", BuildQwen2VL},
    {"qwen3vl", BuildQwen3VL},
    {"phi3", BuildPhi3},
    {"smollm3", BuildSmolLM3},
    {"granite", BuildGranite},
    {"olmo2", BuildOlmo2},
    {"gpt-oss", BuildGptOss},
    {"bert", BuildBert},
    {"nomic-bert", BuildNomicBert},
    {"modern-bert", BuildModernBert},
    {"lfm2", BuildLfm2},
    {"lfm2moe", BuildLfm2Moe},
    {"granitehybrid", BuildGraniteHybrid},
    {"qwen35", BuildQwen35},
    {"qwen35moe", BuildQwen35Moe},
};

}  // namespace

const ArchEntry* FindArch(std::string_view arch) {
  for (const ArchEntry& e : kArchs) {
    if (arch == e.name) return &e;
  }
  return nullptr;
}

std::vector<const char*> SupportedArchs() {
  std::vector<const char*> names;
  for (const ArchEntry& e : kArchs) names.push_back(e.name);
  return names;
}

std::string SupportedArchList() {
  std::string list;
  for (const ArchEntry& e : kArchs) list += std::string(list.empty() ? "" : ", ") + e.name;
  return list;
}

Status BuildDescription(const gguf::GgufFile& f, ModelDesc* d) {
  std::string_view arch;
  Status s = f.GetString("general.architecture", &arch);
  if (s.code() == Code::kNotFound) return FormatError("missing required metadata key 'general.architecture'");
  ZF_RETURN_IF_ERROR(s);
  const ArchEntry* entry = FindArch(arch);
  if (entry == nullptr) {
    return Unsupported("unsupported architecture '" + std::string(arch) + "' (supported: " + SupportedArchList() + ")");
  }
  const Hparams h(f, std::string(arch));
  ZF_RETURN_IF_ERROR(ReadCommon(h, d));
  ZF_RETURN_IF_ERROR(entry->build(h, d));
  // Vocabulary size: the token list is authoritative.
  const gguf::Value* tokens = f.Find("tokenizer.ggml.tokens");
  if (tokens != nullptr && tokens->type == gguf::ValueType::ARRAY) d->n_vocab = int32_t(tokens->count);
  if (d->n_vocab <= 0) return FormatError("missing or empty 'tokenizer.ggml.tokens'");
  return ValidateDesc(*d);
}

}  // namespace zf::model
