// Run-time dispatch of the quant kernels: picks AVX2 kernels when the CPU has AVX2+FMA+F16C
// (AVX-512 VNNI ones on top where it has those, unless ZF_NO_AVX512 is set); on aarch64, unless
// ZF_NO_NEON is set, the NEON float, codebook, Q4_0 and Q8_0 dot products, Q8_0 GEMM, packed
// decode product and prefill GEMM (with SDOT where the CPU has the dot product); and falls
// back to the scalar reference otherwise. The choice is made once (thread-safe static
// initialization) and stored as a table of function pointers.
#include <cassert>
#include <cstdlib>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include "quant/blocks.h"
#include "quant/gemm_packed.h"
#include "quant/packed.h"
#include "quant/kernels.h"

namespace zf::quant {
namespace {

constexpr int kNumTypes = 40;  // covers every GgmlType id handled here (ids < 40)

struct KernelTable {
  VecDotFn vec_dot[kNumTypes] = {};
  QuantizeFn quantize[kNumTypes] = {};
  DequantizeFn dequantize[kNumTypes] = {};
  const char* isa = "scalar";
  void (*gemm_q8_0)(int64_t, const void*, size_t, int64_t, const void*, size_t, int64_t, float*,
                    int64_t) = nullptr;
  void (*axpy)(int64_t, float, const float*, float*) = nullptr;
  bool (*gemv)(GgmlType, int64_t, const void*, size_t, int64_t, const void*, float*) = nullptr;
  void (*gemm_affine)(int64_t, const AffineRows&, int64_t, const void*, size_t, const float*, int64_t,
                      float*, int64_t) = nullptr;
  void (*quantize_tables)(const float*, int64_t, void*, int, int, float*, float*, int32_t*) = nullptr;
  void (*pack_tile)(GgmlType, const void*, size_t, int64_t, int64_t, void*, void*) = nullptr;
  bool (*tile_from_decode)(GgmlType, const void*, int64_t, int64_t, void*) = nullptr;
  void (*gemm_packed)(const void*, int64_t, int, int64_t, const PackedActs&, int64_t, float*, int64_t) = nullptr;
  // Decode product on the packed layout (packed.h); null: no fast kernel, do not pack.
  bool (*gemv_packed)(GgmlType, int64_t, const void*, int64_t, int64_t, int64_t, const void*, float*) = nullptr;
  // Its batched form (GemvPackedMulti); null: one GemvPacked per group and row.
  bool (*gemv_packed_multi)(GgmlType, int64_t, const void*, int64_t, int64_t, int64_t, const void* const*,
                            float* const*, int32_t) = nullptr;
};

// Scalar GemmAffine (the definition the SIMD version is tested against).
void GemmAffineRef(int64_t k, const AffineRows& w, int64_t rows, const void* a, size_t a_stride,
                   const float* asum, int64_t n_tok, float* y, int64_t y_stride) {
  const int64_t nb = k / 32;
  for (int64_t t = 0; t < n_tok; ++t) {
    const auto* at = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(a) + size_t(t) * a_stride);
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (int64_t g = 0; g < nb; ++g) {
        int32_t dot = 0;
        const uint8_t* q = w.q + r * k + g * 32;
        for (int i = 0; i < 32; ++i) dot += int32_t(q[i]) * int32_t(at[g].qs[i]);
        sum += w.d[r * nb + g] * Fp16ToFp32(at[g].d) * float(dot) + w.m[r * nb + g] * asum[t * nb + g];
      }
      y[t * y_stride + r] = sum;
    }
  }
}

// Scalar fallback of GemmQ8_0: one VecDot per (row, token).
void GemmQ8_0Ref(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a,
                 size_t a_stride, int64_t n_tok, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < n_tok; ++t) {
      y[t * y_stride + r] = ref::VecDotQ8_0(k, wb + size_t(r) * w_stride, ab + size_t(t) * a_stride);
    }
  }
}

inline int Index(GgmlType t) { return static_cast<int>(t); }

KernelTable BuildTable() {
  KernelTable k;
  k.gemm_q8_0 = GemmQ8_0Ref;
  k.gemm_affine = GemmAffineRef;
  k.gemm_packed = ref::GemmPacked;
  k.pack_tile = ref::PackTile;
  for (int id = 0; id < kNumTypes; ++id) {
    const GgmlType t = static_cast<GgmlType>(id);
    k.vec_dot[id] = ref::GetVecDotFn(t);
    k.quantize[id] = ref::GetQuantizeFn(t);
    k.dequantize[id] = ref::GetDequantizeFn(t);
  }
#if defined(__x86_64__) || defined(__i386__)
  if (SelectedIsa() == Isa::kAvx2 || SelectedIsa() == Isa::kAvx512) {
    k.isa = "avx2";
    k.vec_dot[Index(GgmlType::F32)] = avx2::VecDotF32;
    k.vec_dot[Index(GgmlType::F16)] = avx2::VecDotF16;
    k.vec_dot[Index(GgmlType::BF16)] = avx2::VecDotBF16;
    k.vec_dot[Index(GgmlType::Q4_0)] = avx2::VecDotQ4_0;
    k.vec_dot[Index(GgmlType::Q4_1)] = avx2::VecDotQ4_1;
    k.vec_dot[Index(GgmlType::Q5_0)] = avx2::VecDotQ5_0;
    k.vec_dot[Index(GgmlType::Q5_1)] = avx2::VecDotQ5_1;
    k.vec_dot[Index(GgmlType::Q8_0)] = avx2::VecDotQ8_0;
    k.vec_dot[Index(GgmlType::Q4_K)] = avx2::VecDotQ4_K;
    k.vec_dot[Index(GgmlType::Q5_K)] = avx2::VecDotQ5_K;
    k.vec_dot[Index(GgmlType::Q6_K)] = avx2::VecDotQ6_K;
    k.vec_dot[Index(GgmlType::IQ4_NL)] = avx2::VecDotIQ4_NL;
    k.vec_dot[Index(GgmlType::IQ4_XS)] = avx2::VecDotIQ4_XS;
    k.vec_dot[Index(GgmlType::MXFP4)] = avx2::VecDotMXFP4;
    k.quantize[Index(GgmlType::Q8_0)] = avx2::QuantizeQ8_0;
    k.quantize[Index(GgmlType::Q8_1)] = avx2::QuantizeQ8_1;
    k.quantize[Index(GgmlType::Q8_K)] = avx2::QuantizeQ8_K;
    k.quantize[Index(GgmlType::F16)] = avx2::QuantizeF16;
    k.dequantize[Index(GgmlType::F16)] = avx2::DequantizeF16;
    k.gemm_q8_0 = avx2::GemmQ8_0;
    k.gemv = avx2::Gemv;
    k.gemv_packed = avx2::GemvPacked;
    k.gemv_packed_multi = avx2::GemvPackedMulti;
    k.gemm_packed = avx2::GemmPacked;
    k.tile_from_decode = avx2::PackTileFromDecode;  // AVX-512 machines keep it (same layouts)
    k.axpy = avx2::AxpyF32;
    if (SelectedIsa() == Isa::kAvx512) {
      k.isa = "avx512-vnni";
      k.vec_dot[Index(GgmlType::Q4_0)] = vnni::VecDotQ4_0;
      k.vec_dot[Index(GgmlType::Q4_1)] = vnni::VecDotQ4_1;
      k.vec_dot[Index(GgmlType::Q5_0)] = vnni::VecDotQ5_0;
      k.vec_dot[Index(GgmlType::Q5_1)] = vnni::VecDotQ5_1;
      k.vec_dot[Index(GgmlType::IQ4_NL)] = vnni::VecDotIQ4_NL;
      k.vec_dot[Index(GgmlType::MXFP4)] = vnni::VecDotMXFP4;
      k.vec_dot[Index(GgmlType::Q8_0)] = avx512::VecDotQ8_0;
      // The activation quantizers on 16 lanes (quant_x86.inc): the same bytes as the AVX2 ones.
      k.quantize[Index(GgmlType::Q8_0)] = vnni::QuantizeQ8_0;
      k.quantize[Index(GgmlType::Q8_1)] = vnni::QuantizeQ8_1;
      k.quantize[Index(GgmlType::Q8_K)] = vnni::QuantizeQ8_K;
      k.gemm_q8_0 = avx512::GemmQ8_0;
      k.gemm_affine = avx512::GemmAffine;
      k.gemm_packed = avx512::GemmPacked;
      k.gemv_packed = avx512::GemvPacked;
      k.gemv_packed_multi = avx512::GemvPackedMulti;
      k.pack_tile = avx512::PackTile;
      k.quantize_tables = avx512::QuantizeQ8_0Tables;
      k.gemv = avx512::Gemv;
    }
  }
#endif
#if defined(__aarch64__)
  if (SelectedIsa() == Isa::kNeon || SelectedIsa() == Isa::kNeonDot) {
    k.isa = "neon";
    k.vec_dot[Index(GgmlType::F32)] = asimd::VecDotF32;
    k.vec_dot[Index(GgmlType::F16)] = asimd::VecDotF16;
    k.vec_dot[Index(GgmlType::IQ4_NL)] = asimd::VecDotIQ4_NL;
    k.vec_dot[Index(GgmlType::IQ4_XS)] = asimd::VecDotIQ4_XS;
    k.vec_dot[Index(GgmlType::MXFP4)] = asimd::VecDotMXFP4;
    k.vec_dot[Index(GgmlType::Q4_0)] = asimd::VecDotQ4_0;
    k.vec_dot[Index(GgmlType::Q8_0)] = asimd::VecDotQ8_0;
    k.gemm_q8_0 = asimd::GemmQ8_0;
    k.gemv_packed = asimd::GemvPacked;
    k.gemm_packed = asimd::GemmPacked;
    k.tile_from_decode = asimd::PackTileFromDecode;
    if (SelectedIsa() == Isa::kNeonDot) {
      k.isa = "neon-dotprod";
      k.vec_dot[Index(GgmlType::Q4_0)] = neon::VecDotQ4_0;
      k.vec_dot[Index(GgmlType::Q8_0)] = neon::VecDotQ8_0;
      k.gemm_q8_0 = neon::GemmQ8_0;
      k.gemv_packed = neon::GemvPacked;
      k.gemm_packed = neon::GemmPacked;
    }
  }
#endif
  return k;
}

const KernelTable& Table() {
  static const KernelTable table = BuildTable();
  return table;
}

inline bool InRange(GgmlType t) { return static_cast<uint32_t>(t) < kNumTypes; }

}  // namespace

bool CpuHasAvx2Fma16() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports checks the OS-enabled (XSAVE) state for AVX as well as cpuid bits.
  // F16C from cpuid leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no "f16c" name.
  // The AVX state the F16C instructions need is covered by the "avx2" check.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
  return false;
#endif
}

bool CpuHasAvx512Vnni() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  // As above, __builtin_cpu_supports also requires the OS to save the ZMM state (XCR0).
  return CpuHasAvx2Fma16() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

bool CpuIsZen4() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool amd = ebx == 0x68747541u && edx == 0x69746E65u && ecx == 0x444D4163u;  // "AuthenticAMD"
  if (!amd || __get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const unsigned base = (eax >> 8) & 0xF, family = base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
  return family == 0x19 && __builtin_cpu_supports("avx512f");  // Zen 3 is family 19h too, without AVX-512
#else
  return false;
#endif
}

bool CpuHasNeonDotprod() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__aarch64__) && defined(__APPLE__)
  int has = 0;
  size_t size = sizeof(has);
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &has, &size, nullptr, 0) == 0 && has != 0;
#else
  return false;
#endif
}

bool IsSupported(GgmlType t) { return ref::GetVecDotFn(t) != nullptr; }

GgmlType VecDotType(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
    case GgmlType::IQ4_NL:
    case GgmlType::MXFP4:
      return GgmlType::Q8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return GgmlType::Q8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
      return GgmlType::Q8_K;
    default:
      return weight_type;  // F32, F16, BF16 (and unsupported types) pair with themselves
  }
}

void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n) {
  DequantizeFn fn = InRange(t) ? Table().dequantize[Index(t)] : nullptr;
  assert(fn != nullptr);
  if (fn) fn(src, dst, n);
}

void QuantizeActivations(GgmlType act_type, const float* src, void* dst, int64_t n) {
  QuantizeFn fn = InRange(act_type) ? Table().quantize[Index(act_type)] : nullptr;
  assert(fn != nullptr);
  if (fn) fn(src, dst, n);
}

VecDotFn GetVecDotFn(GgmlType weight_type) {
  return InRange(weight_type) ? Table().vec_dot[Index(weight_type)] : nullptr;
}

float VecDot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row) {
  VecDotFn fn = GetVecDotFn(weight_type);
  assert(fn != nullptr);
  return fn ? fn(n, weight_row, act_row) : 0.0f;
}

const char* ActiveIsa() { return Table().isa; }

void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a,
              size_t a_stride, int64_t n_tok, float* y, int64_t y_stride) {
  Table().gemm_q8_0(k, w, w_stride, rows, a, a_stride, n_tok, y, y_stride);
}

bool HasFastGemmAffine() { return Table().gemm_affine != GemmAffineRef; }

void GemmAffine(int64_t k, const AffineRows& w, int64_t rows, const void* a, size_t a_stride,
                const float* asum, int64_t n_tok, float* y, int64_t y_stride) {
  Table().gemm_affine(k, w, rows, a, a_stride, asum, n_tok, y, y_stride);
}

void QuantizeQ8_0Tables(const float* x, int64_t k, void* dst, int group, int offset, float* ad, float* asum,
                        int32_t* aoff) {
  if (Table().quantize_tables != nullptr) {
    Table().quantize_tables(x, k, dst, group, offset, ad, asum, aoff);
    return;
  }
  QuantizeActivations(GgmlType::Q8_0, x, dst, k);
  Q8_0Scales(dst, k, group, offset, ad, asum, aoff);
}

void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch) {
  Table().pack_tile(t, w, w_stride, rows, k, dst, scratch);
}

bool PackTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst) {
  return Table().tile_from_decode != nullptr && Table().tile_from_decode(t, group, rows, k, dst);
}

bool HasFastGemmPacked() { return Table().gemm_packed != ref::GemmPacked; }

bool PackedGemvAvailable(GgmlType t) { return IsPackable(t) && Table().gemv_packed != nullptr; }

void GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y) {
  if (Table().gemv_packed != nullptr && Table().gemv_packed(t, k, packed, g0, g1, rows, a, y)) return;
  ref::GemvPacked(t, k, packed, g0, g1, rows, a, y);
}

void GemvPackedMulti(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows,
                     const void* const* a, float* const* y, int32_t n) {
  if (n <= 0) return;
  if (n == 1) {  // the same kernel either way; this one skips the batch's staging buffers
    GemvPacked(t, k, packed, g0, g1, rows, a[0], y[0]);
    return;
  }
  if (Table().gemv_packed_multi != nullptr && Table().gemv_packed_multi(t, k, packed, g0, g1, rows, a, y, n)) return;
  // No batched kernel (NEON, scalar): one group at a time for every row, so the group's bytes
  // come from memory once and stay in L1/L2 for the other rows; each row is reduced by
  // GemvPacked itself, so the results are identical.
  for (int64_t g = g0; g < g1; ++g) {
    for (int32_t i = 0; i < n; ++i) GemvPacked(t, k, packed, g, g + 1, rows, a[i], y[i] + (g - g0) * kPackRows);
  }
}

void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride) {
  Table().gemm_packed(tile, k, group, rows, a, n_tok, y, y_stride);
}

void AxpyF32(int64_t n, float a, const float* x, float* y) {
  if (Table().axpy != nullptr) {
    Table().axpy(n, a, x, y);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void Gemv(GgmlType t, int64_t k, const void* w, size_t stride, int64_t rows, const void* a, float* y) {
  if (Table().gemv != nullptr && Table().gemv(t, k, w, stride, rows, a, y)) return;
  const VecDotFn fn = GetVecDotFn(t);
  const auto* wb = static_cast<const uint8_t*>(w);
  for (int64_t r = 0; r < rows; ++r) y[r] = fn(k, wb + size_t(r) * stride, a);
}

void Q8_0BlockSums(const void* a, int64_t k, float* asum) {
  const auto* x = static_cast<const BlockQ8_0*>(a);
  for (int64_t g = 0; g < k / 32; ++g) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) s += x[g].qs[i];
    asum[g] = Fp16ToFp32(x[g].d) * float(s);
  }
}

}  // namespace zf::quant
