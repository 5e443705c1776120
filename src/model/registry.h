// Architecture registry: general.architecture -> the function that reads that family's options.
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "model/config.h"

namespace zf::model {

// Fills the architecture-specific part of `config` (common keys are already read).
using ArchSetupFn = Status (*)(const gguf::GgufFile& file, ModelConfig* config);

struct ArchEntry {
  const char* name;  // general.architecture value
  ArchSetupFn setup;
};

// nullptr for an unknown architecture.
const ArchEntry* FindArch(std::string_view arch);
// Names of all supported architectures (for error messages and `zerfoo info`).
std::vector<const char*> SupportedArchs();

// One per family file (model/arch_*.cpp).
Status SetupLlama(const gguf::GgufFile& file, ModelConfig* config);
Status SetupGemma3(const gguf::GgufFile& file, ModelConfig* config);

}  // namespace zf::model
