// Internal: the unit layout of a packed 16-row group (packed.h) as offsets, shared by the
// packing code and the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "common/ggml_types.h"

namespace zf::quant {

// The packed decode kernels' software prefetch of their weight stream, chosen once per process
// for the CPU (DecodePrefetchPlan, packed.cpp). Whether it helps depends on the hardware
// prefetchers: on Zen 3 and Zen 5, 8 KiB ahead into L1 took the kernels to the read bandwidth
// (none at all: Q8_0 13.6 instead of 17.5 GB/s on Zen 3, 4/5-bit 19 instead of 33-35 on Zen 5);
// on Zen 4 the same prefetch halved them from DRAM (BM_GemvPacked[Multi]/dram_*, n = 1, one
// thread: Q4_K 20.9 -> 32.8 GB/s without it, Q8_0 26.3 -> 37.9, Q4_1 26.5 -> 33.6), while Q6_K,
// whose kernel does the most arithmetic per byte, gained from a prefetch into L2 (15.1 -> 22.6).
struct PrefetchPlan {
  size_t ahead = 0;     // bytes ahead of the unit being read; 0: no software prefetch
  bool into_l1 = true;  // else into L2 only
};
// The plan for a weight type's kernel (ZF_DECODE_PREFETCH overrides the CPU's default).
const PrefetchPlan& DecodePrefetchPlan(GgmlType t);
// ZF_DECODE_PREFETCH's value: off, l1[:BYTES] or l2[:BYTES] (8 KiB without a size, at most
// 1 MiB). False, plan untouched, for anything else (auto, a typo): the CPU's default then.
bool ParseDecodePrefetch(const char* v, PrefetchPlan* plan);

// Internal linkage for everything up to the staged activations: this header is included by
// files compiled for different ISAs (-mavx512f, -mavx2, +dotprod, baseline), and in unoptimized
// builds the inline functions are emitted out of line, where the linker would keep one file's
// copy for all (one with AVX-512 stores in a build run on an AVX2 machine).
namespace {

// A group holds its blocks in units, one after the other; a unit holds the fields of its
// blocks side by side (scales, then mins, fifth-bit masks, quants), so the kernels read one
// group as one forward stream. Measured on Zen 3 (AVX2, 4 KiB pages): with the fields in
// per-group regions instead (d of every block, then m, ..., then the quants) the same kernels
// streamed 11-13 GB/s where a linear sweep of the same bytes read 16-17; block-major reached
// 14-17 (Q4_1 +25%, Q8_0 +9%).
enum : int { kBookNone = 0, kBookIQ4NL = 1, kBookMXFP4 = 2 };

struct PackedLayout {
  int64_t nb = 0;          // 32-element blocks per row (super-blocks for Q4_K, Q6_K, IQ4_XS)
  bool has_min = false;    // Q4_1, Q5_1
  bool has_high = false;   // Q5_0, Q5_1
  bool eight_bit = false;  // Q8_0
  int32_t offset = 0;      // Q4_0: 8, Q5_0: 16 (w = d * (q - offset)); 0 otherwise
  // IQ4_NL, MXFP4: Q4_0's layout, the nibble indexing a 16-entry int8 codebook (w = d x
  // book[q]); MXFP4's d is one E8M0 byte per row (16 of the 32 bytes per block are padding).
  int book = 0;            // kBookNone, kBookIQ4NL, kBookMXFP4
  bool e8m0 = false;       // MXFP4
  size_t block_bytes = 0;  // the file's bytes per block
  size_t q_block = 0;      // quant bytes per block and 16 rows (512, 256, or 2048 for K)
  // Units: 2 blocks for the 32-element formats (every unit a multiple of 64 bytes whatever
  // the fields), 1 super-block for Q4_K, Q6_K and IQ4_XS; the last unit of an odd nb is half
  // padding.
  int unit_shift = 0;      // log2(blocks per unit)
  size_t unit = 0;         // bytes per unit
  size_t group = 0;        // bytes per 16-row group: units x unit
  // Field offsets inside a unit; block j of the unit at + j x (the field's bytes per block):
  // d 32 (16 F16), m 32, h 64 (8 masks of 8 bytes), q q_block.
  size_t d_off = 0, m_off = 0, h_off = 0, q_off = 0;
  // Q4_K per super-block: d and dmin (16 F16 each), the unpacked 6-bit sub-block scales and
  // mins (u8, 8 per super-block: 128 bytes each), quants (2048).
  bool q4_k = false;
  size_t dmin_off = 0, sc_off = 0, mn_off = 0;
  // Q6_K per super-block: d (F16), 32 bytes of padding, the 16 int8 scales (sub-block j:
  // rows 0..15), low-nibble vectors (2048 bytes) and high-bit vectors (1024 bytes), packed.h.
  bool q6_k = false;
  size_t qh_off = 0;
  // IQ4_XS per super-block: d (F16), 32 bytes of padding, the 8 sub-block scales as signed
  // int8 (ls - 32; sub-block j: rows 0..15), then 2048 quant bytes: chunk 4j+c holds rows
  // 0..15 x the file bytes qs[16j+4c..16j+4c+3] (low nibbles elements 32j+4c+i, high nibbles
  // 32j+16+4c+i: each sub-block is an IQ4_NL block's 256 quant bytes).
  bool iq4_xs = false;

  // Byte offset, from its group's start, of block b's field at `off` (`size` bytes per block).
  size_t At(int64_t b, size_t off, size_t size) const {
    return size_t(b >> unit_shift) * unit + off + size_t(b & ((int64_t{1} << unit_shift) - 1)) * size;
  }
  size_t D(int64_t b) const { return At(b, d_off, 32); }
  size_t M(int64_t b) const { return At(b, m_off, 32); }
  size_t H(int64_t b) const { return At(b, h_off, 64); }
  size_t Q(int64_t b) const { return At(b, q_off, q_block); }
  // The unit holding block b starts here.
  size_t UnitAt(int64_t b) const { return size_t(b >> unit_shift) * unit; }
};

// Blocks per unit of the 32-element formats, a compile-time constant for the kernels' inner
// loops (the general At() costs them ~6% in L2-resident runs).
constexpr int kUnitShift = 1;
constexpr int64_t kUnitBlocks = int64_t{1} << kUnitShift;

// The fields of one block of a 32-element format, inside its unit.
struct BlockFields {
  const uint8_t* q;    // q_block bytes
  const uint16_t* d;   // 16 F16 scales
  const uint16_t* m;   // 16 F16 mins (Q4_1, Q5_1)
  const uint8_t* h;    // 8 x 64-bit fifth-bit masks (Q5_0, Q5_1)
};
template <int J>  // the block's place in its unit
inline BlockFields FieldsInUnit(const PackedLayout& l, const uint8_t* u) {
  return {u + l.q_off + J * l.q_block, reinterpret_cast<const uint16_t*>(u + l.d_off + J * 32),
          reinterpret_cast<const uint16_t*>(u + l.m_off + J * 32), u + l.h_off + J * 64};
}

// The decode kernels' software prefetch (PrefetchPlan): [p + ahead, + bytes), a line at a time.
inline void PrefetchAhead(const PrefetchPlan& plan, const uint8_t* p, size_t bytes) {
  if (plan.ahead == 0) return;
  p += plan.ahead;
  if (plan.into_l1) {
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 3);
  } else {
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 2);
  }
}

// Calls f(fields, i, j) for blocks b0 + i, i in [0, n), of group grp of a 32-element format:
// a unit at a time, prefetched once, its address worked out once and each block's place in it,
// j, a constant (std::integral_constant; b0 is a multiple of kUnitBlocks: the kernels' passes
// start at multiples of kStagedBlocks). Inline, so the kernels' compilers keep the layout's
// offsets in registers.
// prefetch: null when the group was just read for other rows of a batch (GemvPackedMulti's
// token blocks after the first), so its lines and those ahead are already on their way.
template <typename F>
inline void ForBlocks32(const PackedLayout& l, const uint8_t* grp, int64_t b0, int64_t n, F&& f,
                        const PrefetchPlan* prefetch) {
  static_assert(kUnitBlocks == 2, "two blocks per unit");
  const uint8_t* u = grp + size_t(b0 / kUnitBlocks) * l.unit;
  for (int64_t i = 0; i < n; i += kUnitBlocks, u += l.unit) {
    if (prefetch != nullptr) PrefetchAhead(*prefetch, u, l.unit);
    f(FieldsInUnit<0>(l, u), i, std::integral_constant<int, 0>{});
    if (i + 1 < n) f(FieldsInUnit<1>(l, u), i + 1, std::integral_constant<int, 1>{});
  }
}

// valid == false for types that are not packable.
inline PackedLayout GetPackedLayout(GgmlType t, int64_t k, bool* valid) {
  PackedLayout l;
  *valid = true;
  switch (t) {
    case GgmlType::Q8_0: l.eight_bit = true; l.block_bytes = 34; break;
    case GgmlType::Q4_0: l.offset = 8; l.block_bytes = 18; break;
    case GgmlType::Q4_1: l.has_min = true; l.block_bytes = 20; break;
    case GgmlType::Q5_0: l.has_high = true; l.offset = 16; l.block_bytes = 22; break;
    case GgmlType::Q5_1: l.has_min = true; l.has_high = true; l.block_bytes = 24; break;
    case GgmlType::IQ4_NL: l.book = kBookIQ4NL; l.block_bytes = 18; break;
    case GgmlType::MXFP4: l.book = kBookMXFP4; l.e8m0 = true; l.block_bytes = 17; break;
    case GgmlType::Q4_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS: {
      if (k % 256 != 0) {  // a row length the super-blocks do not divide
        *valid = false;
        return l;
      }
      l.nb = k / 256;
      l.q_block = 2048;
      if (t == GgmlType::Q4_K) {
        l.q4_k = true;
        l.block_bytes = 144;
        l.dmin_off = 32;
        l.sc_off = 64;
        l.mn_off = l.sc_off + 128;
        l.q_off = l.mn_off + 128;
        l.unit = l.q_off + 2048;  // 2368 = 37 x 64
      } else if (t == GgmlType::IQ4_XS) {
        l.iq4_xs = true;
        l.block_bytes = 136;
        l.sc_off = 64;
        l.q_off = l.sc_off + 128;
        l.unit = l.q_off + 2048;  // 2240 = 35 x 64
      } else {
        l.q6_k = true;
        l.block_bytes = 210;
        l.sc_off = 64;
        l.q_off = l.sc_off + 256;
        l.qh_off = l.q_off + 2048;
        l.unit = l.qh_off + 1024;  // 3392 = 53 x 64
      }
      l.group = size_t(l.nb) * l.unit;
      return l;
    }
    default: *valid = false; return l;
  }
  l.nb = k / 32;
  l.q_block = l.eight_bit ? 512 : 256;
  l.unit_shift = kUnitShift;
  size_t off = 2 * 32;                   // d
  l.m_off = off;
  if (l.has_min) off += 2 * 32;          // m
  l.h_off = off;
  if (l.has_high) off += 2 * 64;         // h
  l.q_off = off;
  l.unit = off + 2 * l.q_block;
  l.group = size_t((l.nb + kUnitBlocks - 1) / kUnitBlocks) * l.unit;
  return l;
}

// The type switch of the ISAs' packed GEMVs (packed.h GemvPacked): K names the kernels,
// Legacy<kEight, kMin, kHigh> (the 32-element formats), Q4K and Q6K, each taking (layout,
// packed, g0, g1, rows, activation row, y). Instantiated in each kernel file,
// so with that file's ISA flags. False for types without a packed layout.
template <typename K>
bool DispatchPackedGemv(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                        float* y) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  if (!valid) return false;
  const auto* p = static_cast<const uint8_t*>(packed);
  const auto* x = static_cast<const uint8_t*>(a);
  switch (t) {
    case GgmlType::Q8_0: K::template Legacy<true, false, false>(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::Q4_0: K::template Legacy<false, false, false>(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::Q4_1: K::template Legacy<false, true, false>(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::Q5_0: K::template Legacy<false, false, true>(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::Q5_1: K::template Legacy<false, true, true>(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::Q4_K: K::Q4K(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::Q6_K: K::Q6K(l, p, g0, g1, rows, x, y); return true;
    case GgmlType::IQ4_NL: return K::template Codebook<kBookIQ4NL>(l, p, g0, g1, rows, x, y);
    case GgmlType::MXFP4: return K::template Codebook<kBookMXFP4>(l, p, g0, g1, rows, x, y);
    case GgmlType::IQ4_XS: K::IQ4XS(l, p, g0, g1, rows, x, y); return true;
    default: return false;
  }
}

// The same switch for the batched product (packed.h GemvPackedMulti): K's kernels then take
// (layout, packed, g0, g1, rows, activation rows, output rows, n) with n <= kMultiChunk; longer
// batches run as several chunks (each reads the weights once).
constexpr int32_t kMultiChunk = 16;
template <typename K>
bool DispatchPackedGemvMulti(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows,
                             const void* const* a, float* const* y, int32_t n) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  if (!valid) return false;
  switch (t) {
    case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q4_K: case GgmlType::Q6_K: case GgmlType::IQ4_NL: case GgmlType::MXFP4: case GgmlType::IQ4_XS:
      break;
    default: return false;
  }
  const auto* p = static_cast<const uint8_t*>(packed);
  for (int32_t i = 0; i < n; i += kMultiChunk) {
    const int32_t m = n - i < kMultiChunk ? n - i : kMultiChunk;
    const auto* x = reinterpret_cast<const uint8_t* const*>(a + i);
    float* const* out = y + i;
    switch (t) {
      case GgmlType::Q8_0: K::template LegacyMulti<true, false, false>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::Q4_0: K::template LegacyMulti<false, false, false>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::Q4_1: K::template LegacyMulti<false, true, false>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::Q5_0: K::template LegacyMulti<false, false, true>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::Q5_1: K::template LegacyMulti<false, true, true>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::Q4_K: K::Q4KMulti(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::IQ4_NL: K::template LegacyMulti<false, false, false, kBookIQ4NL>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::MXFP4: K::template LegacyMulti<false, false, false, kBookMXFP4>(l, p, g0, g1, rows, x, out, m); break;
      case GgmlType::IQ4_XS: K::IQ4XSMulti(l, p, g0, g1, rows, x, out, m); break;
      default: K::Q6KMulti(l, p, g0, g1, rows, x, out, m); break;
    }
  }
  return true;
}

// The drivers the x86 ISAs' packed kernels share (packed_avx512.cpp, packed_avx2.cpp), the K of
// DispatchPackedGemv and DispatchPackedGemvMulti. G is the ISA file's:
//   G::TokenBlocks(n, f): f(std::integral_constant<int, T>, i) for token blocks [i, i + T)
//   G::Q4K<T> / G::Q6K<T> / G::IQ4XS<T>(layout, group, T activation rows, T output rows, valid rows,
//   prefetch)
//   G::Legacy<kMaxN, kEight, kMin, kHigh, kBook>(layout, packed, g0, g1, rows, activations, outputs, n)
template <typename G>
struct PackedKernels {
  // The super-block kernels (Q8_K activations) for n tokens: per group, the token blocks (the
  // first one prefetches).
  enum : int { kQ4K = 0, kQ6K = 1, kIQ4XS = 2 };
  template <int kKind>
  static void KQuant(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows,
                     const uint8_t* const* a, float* const* y, int32_t n) {
    const PrefetchPlan& plan = DecodePrefetchPlan(kKind == kQ6K ? GgmlType::Q6_K : GgmlType::Q4_K);
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* grp = packed + size_t(g) * l.group;
      G::TokenBlocks(n, [&](auto tc, int32_t i) {
        constexpr int T = decltype(tc)::value;
        const BlockQ8_K* ab[T];
        float* out[T];
        for (int t = 0; t < T; ++t) {
          ab[t] = reinterpret_cast<const BlockQ8_K*>(a[i + t]);
          out[t] = y[i + t] + (g - g0) * kPackRows;
        }
        const PrefetchPlan* prefetch = i == 0 ? &plan : nullptr;
        if constexpr (kKind == kQ6K) {
          G::template Q6K<T>(l, grp, ab, out, rows - g * kPackRows, prefetch);
        } else if constexpr (kKind == kIQ4XS) {
          G::template IQ4XS<T>(l, grp, ab, out, rows - g * kPackRows, prefetch);
        } else {
          G::template Q4K<T>(l, grp, ab, out, rows - g * kPackRows, prefetch);
        }
      });
    }
  }
  // One token.
  template <bool kEight, bool kMin, bool kHigh>
  static void Legacy(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
                     float* y) {
    G::template Legacy<1, kEight, kMin, kHigh>(l, p, g0, g1, rows, &a, &y, 1);
  }
  // IQ4_NL, MXFP4 (kBook): Q4_0's kernel with the nibbles looked up in the codebook.
  template <int kBook>
  static bool Codebook(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
                       float* y) {
    G::template Legacy<1, false, false, false, kBook>(l, p, g0, g1, rows, &a, &y, 1);
    return true;
  }
  static void Q4K(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
                  float* y) {
    KQuant<kQ4K>(l, p, g0, g1, rows, &a, &y, 1);
  }
  static void Q6K(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
                  float* y) {
    KQuant<kQ6K>(l, p, g0, g1, rows, &a, &y, 1);
  }
  // IQ4_XS: sub-blocks of 32 through the IQ4_NL codebook, scaled by their signed 6-bit scales.
  static void IQ4XS(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
                    float* y) {
    KQuant<kIQ4XS>(l, p, g0, g1, rows, &a, &y, 1);
  }
  // n <= kMultiChunk tokens.
  template <bool kEight, bool kMin, bool kHigh, int kBook = kBookNone>
  static void LegacyMulti(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows,
                          const uint8_t* const* a, float* const* y, int32_t n) {
    G::template Legacy<kMultiChunk, kEight, kMin, kHigh, kBook>(l, p, g0, g1, rows, a, y, n);
  }
  static void Q4KMulti(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows,
                       const uint8_t* const* a, float* const* y, int32_t n) {
    KQuant<kQ4K>(l, p, g0, g1, rows, a, y, n);
  }
  static void Q6KMulti(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows,
                       const uint8_t* const* a, float* const* y, int32_t n) {
    KQuant<kQ6K>(l, p, g0, g1, rows, a, y, n);
  }
  static void IQ4XSMulti(const PackedLayout& l, const uint8_t* p, int64_t g0, int64_t g1, int64_t rows,
                         const uint8_t* const* a, float* const* y, int32_t n) {
    KQuant<kIQ4XS>(l, p, g0, g1, rows, a, y, n);
  }
};

}  // namespace

// One activation row of the 32-element formats staged for the packed GEMV kernels (AVX-512
// and AVX2), blocks [b0, b0 + n) at a time: quants as 8 dwords per block (the kernels
// broadcast 4 bytes at a time), block scales as floats, the Q8_1 sums, and the integer
// correction -offset x (sum of the block's quants) for the fixed-offset formats (0 otherwise).
// StageActivations is portable (packed.cpp; NEON); the x86 kernel files use StageActivationsWith.
constexpr int64_t kStagedBlocks = 128;  // rows up to 4096 elements in one pass
static_assert(kStagedBlocks % kUnitBlocks == 0, "passes start at a unit");
struct StagedActivations {
  alignas(64) int32_t q[kStagedBlocks * 8];
  alignas(64) float d[kStagedBlocks];
  alignas(64) float s[kStagedBlocks];
  alignas(64) int32_t corr[kStagedBlocks];
};
// a: a Q8_0 row (qs at byte 2) or, with q8_1, a Q8_1 row (qs at byte 4); n <= kStagedBlocks.
void StageActivations(const uint8_t* a, bool q8_1, int64_t b0, int64_t n, int32_t offset, StagedActivations* st);

namespace {  // internal linkage, as above: each ISA file compiles its own copy
// StageActivations with the F16 -> F32 conversion `to_f32` (exact in any form: every half is a
// float): the x86 kernel files pass the F16C instruction, where the portable function's
// out-of-line software conversion took about as long as the staging itself (exact prefill).
template <typename ToF32>
inline void StageActivationsWith(ToF32 to_f32, const uint8_t* a, bool q8_1, int64_t b0, int64_t n, int32_t offset,
                                 StagedActivations* st) {
  const size_t bytes = q8_1 ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0);
  for (int64_t b = 0; b < n; ++b) {
    const uint8_t* blk = a + size_t(b0 + b) * bytes;
    const auto* qs = reinterpret_cast<const int8_t*>(blk + (q8_1 ? 4 : 2));
    std::memcpy(st->q + b * 8, qs, 32);
    uint16_t h;
    std::memcpy(&h, blk, 2);
    st->d[b] = to_f32(h);
    if (q8_1) {
      std::memcpy(&h, blk + 2, 2);
      st->s[b] = to_f32(h);
    }
    int32_t sum = 0;
    if (offset != 0) {
      for (int i = 0; i < 32; ++i) sum += qs[i];
    }
    st->corr[b] = -offset * sum;
  }
}
}  // namespace

}  // namespace zf::quant
