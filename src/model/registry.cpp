// The table of supported architectures (explicit, so static linking cannot drop an entry).
#include "model/registry.h"

namespace zf::model {
namespace {

// Families sharing the llama block (pre-norm, SwiGLU, rope) reuse its setup.
constexpr ArchEntry kArchs[] = {
    {"llama", SetupLlama},
    {"mistral", SetupLlama},
    {"gemma3", SetupGemma3},
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

}  // namespace zf::model
