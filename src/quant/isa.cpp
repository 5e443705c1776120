// The one choice of CPU kernel instruction set (kernels.h, SelectedIsa).
#include "common/switches.h"
#include "quant/kernels.h"

namespace zf::quant {
namespace {

Isa Pick() {
#if defined(__x86_64__) || defined(__i386__)
  if (CpuHasAvx512Vnni() && !env::NoAvx512()) return Isa::kAvx512;
  if (CpuHasAvx2Fma16()) return Isa::kAvx2;
#endif
#if defined(__aarch64__)
  if (!env::NoNeon()) return CpuHasNeonDotprod() ? Isa::kNeonDot : Isa::kNeon;
#endif
  return Isa::kScalar;
}

}  // namespace

Isa SelectedIsa() {
  static const Isa isa = Pick();
  return isa;
}

}  // namespace zf::quant
