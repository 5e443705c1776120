// Architecture registry: general.architecture -> the builder that fills the model description
// for that family. Each builder is one small file (model/arch_*.cpp): it starts from ReadCommon
// and sets what its family does differently.
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/description.h"
#include "model/hparams.h"

namespace zf::model {

using ArchBuildFn = Status (*)(const Hparams& h, ModelDesc* d);

struct ArchEntry {
  const char* name;  // general.architecture value
  ArchBuildFn build;
};

// nullptr for an unknown architecture.
const ArchEntry* FindArch(std::string_view arch);
// Names of all supported architectures (error messages, `zerfoo info`).
std::vector<const char*> SupportedArchs();
// "llama, mistral, ..." for messages.
std::string SupportedArchList();

// Reads general.architecture and builds its description (arch builder + validation).
// kUnsupported names an architecture without a builder.
Status BuildDescription(const gguf::GgufFile& file, ModelDesc* d);

// One per family file (model/arch_*.cpp).
Status BuildLlama(const Hparams& h, ModelDesc* d);
Status BuildMistral3(const Hparams& h, ModelDesc* d);
Status BuildGemma2(const Hparams& h, ModelDesc* d);
Status BuildGemma3(const Hparams& h, ModelDesc* d);
Status BuildGemmaEmbedding(const Hparams& h, ModelDesc* d);
Status BuildGemma4(const Hparams& h, ModelDesc* d);
Status BuildQwen2(const Hparams& h, ModelDesc* d);
// rope.dimension_sections (required, as the reference requires it) into d->mrope_sections,
// checked against every layer's rotated pairs (model/arch_qwen_vl.cpp).
Status ReadMropeSections(const Hparams& h, ModelDesc* d);
Status BuildQwen3(const Hparams& h, ModelDesc* d);
Status BuildQwen3Moe(const Hparams& h, ModelDesc* d);
Status BuildQwen2VL(const Hparams& h, ModelDesc* d);
Status BuildQwen3VL(const Hparams& h, ModelDesc* d);
Status BuildPhi3(const Hparams& h, ModelDesc* d);
Status BuildSmolLM3(const Hparams& h, ModelDesc* d);
Status BuildGranite(const Hparams& h, ModelDesc* d);
Status BuildOlmo2(const Hparams& h, ModelDesc* d);
Status BuildBert(const Hparams& h, ModelDesc* d);
Status BuildNomicBert(const Hparams& h, ModelDesc* d);
Status BuildModernBert(const Hparams& h, ModelDesc* d);
Status BuildGptOss(const Hparams& h, ModelDesc* d);
Status BuildLfm2(const Hparams& h, ModelDesc* d);
Status BuildLfm2Moe(const Hparams& h, ModelDesc* d);
Status BuildGraniteHybrid(const Hparams& h, ModelDesc* d);
Status BuildQwen35(const Hparams& h, ModelDesc* d);
Status BuildQwen35Moe(const Hparams& h, ModelDesc* d);

}  // namespace zf::model
