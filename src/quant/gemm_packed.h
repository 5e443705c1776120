// Prefill GEMM on weight tiles repacked per call into a VNNI-friendly, row-interleaved layout.
//
// Why: the row-major prefill kernels (GemmAffine, GemmQ8_0) put the 32 elements of one block in
// the lanes of a register, so every block costs a float conversion, a scale multiply and an FMA
// per VPDPBUSD, plus a horizontal reduction per (row, token). Here the 16 lanes of a register
// are 16 weight rows: one VPDPBUSD multiplies 4 consecutive elements of 16 rows by the same 4
// activation bytes (a 32-bit broadcast), the 8 (or 4) products of a scale group add up in int32
// lanes, and the group's scales are applied once for 16 rows with two FMAs. No horizontal sums.
// The AVX2 kernel (gemm_avx2.cpp) takes 8 rows per register and VPMADDUBSW + VPMADDWD.
//
// Every supported format is unpacked exactly into groups of G elements (G = 32 or 16):
//   w[r][G*g + i] = d[g][r] * q[g][r][i] + m[g][r],  q unsigned (0..255), d and m floats,
// where d and m are products of a 16-bit float and a small integer (exact in float), so the
// tile holds exactly the values the reference dequantizes. Signed formats are shifted to
// unsigned quants with the shift folded into m (Q8_0: q + 128, m = -128 d; Q6_K: q + 32).
//
// Tile layout (kPackRows rows, k elements, G-element groups, k/G groups back to back):
//   group g: G/4 chunks of 64 bytes (chunk c: row 0's elements 4c..4c+3, row 1's, ... row 15's),
//            then d[16] floats, then m[16] floats.
// Rows past `rows` in a tile are zero (they contribute nothing and are not stored).
//
// Activations: Q8_0 rows (quantized as the reference does) plus tables per token: ad[t][b] =
// the scale of block b (k/32 per token), asum[t][g] = ad * (sum of the quants of group g) (k/G
// per token), and for formats with a fixed offset (m = -c * d: Q4_0, Q5_0, Q8_0, Q6_K)
// aoff[t][g] = -c * (sum of the quants of group g), an int32 that starts the group's integer
// dot product so the offset costs no float operation (and no cancellation error).
// All functions are pure (thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>

#include <type_traits>

#include "quant/packed.h"  // kPackRows: the same 16-row interleave as the decode layout
#include "quant/packed_layout.h"
#include "common/ggml_types.h"

namespace zf::quant {


// Group size of the packed layout for weight type t: 32 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K), 16 (Q6_K), or 0 when t cannot be packed.
int PackGroup(GgmlType t);

// The fixed offset c of t's packed quants (m = -c * d): 8, 16, 128, 32 for Q4_0, Q5_0, Q8_0,
// Q6_K; 0 for the formats with a free m.
int PackOffset(GgmlType t);

// Bytes of one packed tile of k elements per row (k a multiple of 32 and of t's block size).
size_t PackedTileBytes(int64_t k, int group);

// Zeroes the quants and scales of rows [rows, 16) of a tile: PackTile's padding rows (its
// -0.0 scales included), for the packers that fill all 16 rows from a decode group.
void ClearTilePaddingRows(void* tile, int64_t rows, int64_t k, int group);

// Packs `rows` (1..kPackRows) rows of type t, row stride w_stride bytes, into dst
// (PackedTileBytes bytes). `scratch` holds k bytes + 2 * k/16 floats (one row unpacked).
void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch);

// The tables of one Q8_0 activation row of k elements for group size `group`: ad and asum, and
// aoff when offset != 0 (else aoff is not written and may be null).
void Q8_0Scales(const void* a, int64_t k, int group, int offset, float* ad, float* asum, int32_t* aoff);

// QuantizeActivations(Q8_0) and Q8_0Scales in one pass (same bytes and values).
void QuantizeQ8_0Tables(const float* x, int64_t k, void* dst, int group, int offset, float* ad, float* asum,
                        int32_t* aoff);

// Activation tables for GemmPacked, each [n_tok][...] with the per-token sizes above.
struct PackedActs {
  const void* q;        // Q8_0 rows
  size_t q_stride;      // bytes between tokens
  const float* ad;      // [n_tok][k/32]
  const float* asum;    // [n_tok][k/G]
  const int32_t* aoff;  // [n_tok][k/G] or null: with it, m is ignored (the tile's format has a fixed offset)
  int32_t offset = 0;   // the tile format's PackOffset, with or without aoff: kernels whose 8-bit
                        // products could saturate (AVX2) or are signed x signed (NEON) treat
                        // Q8_0 tiles (c = 128) apart
};

// Packs the tile of one decode-layout group (packed.h) of a matrix of type t: the bytes
// PackTile writes for the group's `rows` rows unpacked. False (nothing written) when this CPU
// has no such packer or t has no decode layout; then unpack the rows and call PackTile.
bool PackTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst);

// y[t * y_stride + r] = sum over the row of w[r][i] * a[t][i], for r < rows, t < n_tok.
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);

// True when GemmPacked has a SIMD kernel on this CPU.
bool HasFastGemmPacked();

namespace ref {
void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch);
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);
}  // namespace ref

// ---- Shared by the ISAs' kernel files (instantiated there, so with their ISA flags) ----

// The format switch of PackTileFromDecode: P names the packers LegacyTile(layout, t, group,
// out), Q4KTile(layout, group, out) and Q6KTile(layout, group, out), which fill all 16 rows.
template <typename P>
bool DispatchTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  const int g = PackGroup(t);
  if (!valid || g == 0) return false;
  const auto* grp = static_cast<const uint8_t*>(group);
  auto* out = static_cast<uint8_t*>(dst);
  if (l.q4_k) {
    P::Q4KTile(l, grp, out);
  } else if (l.q6_k) {
    P::Q6KTile(l, grp, out);
  } else {
    P::LegacyTile(l, t, grp, out);
  }
  if (rows < kPackRows) ClearTilePaddingRows(out, rows, k, g);
  return true;
}

// The format switch of the GemmPacked kernels with signed x unsigned 8-bit products (AVX2's
// VPMADDUBSW, NEON's SDOT after flipping Q8_0's bias): R names Run<G, kOff, kSigned>(tile, k,
// rows, acts, n_tok, y, y_stride); kSigned: Q8_0 tiles (offset 128), whose quants are flipped
// back to signed and need neither aoff nor m.
template <typename R>
void DispatchSignedGemm(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok,
                        float* y, int64_t y_stride) {
  const auto* tp = static_cast<const uint8_t*>(tile);
  if (group == 16) {  // Q6_K (fixed offset 32, quants <= 63)
    a.aoff != nullptr ? R::template Run<16, true, false>(tp, k, rows, a, n_tok, y, y_stride)
                      : R::template Run<16, false, false>(tp, k, rows, a, n_tok, y, y_stride);
  } else if (a.offset == 128) {
    R::template Run<32, true, true>(tp, k, rows, a, n_tok, y, y_stride);
  } else if (a.aoff == nullptr) {
    R::template Run<32, false, false>(tp, k, rows, a, n_tok, y, y_stride);
  } else {
    R::template Run<32, true, false>(tp, k, rows, a, n_tok, y, y_stride);
  }
}

// Tokens [0, n_tok) in register tiles of kMax tokens and one tail tile of n_tok % kMax:
// tile(t0, std::integral_constant<int, T>) for each, T a compile-time token count.
template <int T, typename F>
inline void TailTokenTile(int64_t t0, int64_t n, F& tile) {
  if constexpr (T > 0) {
    if (n == T) {
      tile(t0, std::integral_constant<int, T>{});
    } else {
      TailTokenTile<T - 1>(t0, n, tile);
    }
  }
}
template <int kMax, typename F>
inline void ForTokenTiles(int64_t n_tok, F&& tile) {
  int64_t t = 0;
  for (; t + kMax <= n_tok; t += kMax) tile(t, std::integral_constant<int, kMax>{});
  TailTokenTile<kMax - 1>(t, n_tok - t, tile);
}

#if defined(__x86_64__) || defined(__i386__)
namespace avx512 {  // gemm_avx512.cpp; only call when CpuHasAvx512Vnni()
void QuantizeQ8_0Tables(const float* x, int64_t k, void* dst, int group, int offset, float* ad, float* asum,
                        int32_t* aoff);
void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch);
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);
}  // namespace avx512
namespace avx2 {  // gemm_avx2.cpp, tile_from_decode_avx2.cpp; only call when CpuHasAvx2Fma16()
bool PackTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst);
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);
}  // namespace avx2
#endif
#if defined(__aarch64__)
namespace neon {  // gemm_neon.cpp; only call when CpuHasNeonDotprod()
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);
}  // namespace neon
namespace asimd {  // gemm_asimd.cpp, tile_from_decode_asimd.cpp: every aarch64 CPU
bool PackTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst);
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);
}  // namespace asimd
#endif

}  // namespace zf::quant
