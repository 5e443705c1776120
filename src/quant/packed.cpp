// Packing into the row-interleaved decode layout (packed.h) and back, the scalar reference
// product (the run-time choice of kernel is in quant.cpp's table).
#include "quant/packed.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/switches.h"
#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/packed_layout.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

// Field offsets inside one file block: d at 0 (F16, or MXFP4's E8M0 byte), then m (if any),
// qh (if any), qs.
inline size_t ScaleBytes(const PackedLayout& l) { return l.e8m0 ? 1 : 2; }
inline size_t MinAt() { return 2; }
inline size_t QhAt(const PackedLayout& l) { return l.has_min ? 4 : ScaleBytes(l); }
inline size_t QsAt(const PackedLayout& l) { return QhAt(l) + (l.has_high ? 4 : 0); }

// Q4_K: super-block s of row r -> d, dmin, the 8 unpacked scales and mins, and the 128 quant
// bytes as 32 chunks of 4 (chunk 8c+i = qs[32c+4i..]: low nibbles sub-block 2c, high 2c+1).
void PackQ4KGroup(const PackedLayout& l, const uint8_t* src, size_t stride, int64_t n, uint8_t* dst) {
  for (int64_t r = 0; r < n; ++r) {
    const auto* x = reinterpret_cast<const BlockQ4_K*>(src + size_t(r) * stride);
    for (int64_t s = 0; s < l.nb; ++s) {
      uint8_t* u = dst + l.UnitAt(s);
      reinterpret_cast<uint16_t*>(u + l.d_off)[r] = x[s].d;
      reinterpret_cast<uint16_t*>(u + l.dmin_off)[r] = x[s].dmin;
      uint8_t sc[8], mn[8];
      UnpackScaleMinK4(x[s].scales, sc, mn);
      for (int j = 0; j < 8; ++j) {
        u[l.sc_off + size_t(j) * kPackRows + size_t(r)] = sc[j];
        u[l.mn_off + size_t(j) * kPackRows + size_t(r)] = mn[j];
      }
      uint8_t* q = u + l.q_off;
      for (int ch = 0; ch < 32; ++ch) std::memcpy(q + size_t(ch * kPackRows + r) * 4, x[s].qs + 4 * ch, 4);
    }
  }
}

// IQ4_XS: super-block s of row r -> d, the 8 scales as signed int8 (ls - 32), and the 128
// quant bytes as 32 chunks of 4 (chunk 4j+c = qs[16j+4c..]: sub-block j).
void PackIQ4XSGroup(const PackedLayout& l, const uint8_t* src, size_t stride, int64_t n, uint8_t* dst) {
  for (int64_t r = 0; r < n; ++r) {
    const auto* x = reinterpret_cast<const BlockIQ4_XS*>(src + size_t(r) * stride);
    for (int64_t s = 0; s < l.nb; ++s) {
      uint8_t* u = dst + l.UnitAt(s);
      reinterpret_cast<uint16_t*>(u + l.d_off)[r] = x[s].d;
      for (int j = 0; j < 8; ++j) u[l.sc_off + size_t(j) * kPackRows + size_t(r)] = uint8_t(IQ4XSScale(x[s], j) - 32);
      uint8_t* q = u + l.q_off;
      for (int ch = 0; ch < 32; ++ch) std::memcpy(q + size_t(ch * kPackRows + r) * 4, x[s].qs + 4 * ch, 4);
    }
  }
}

// The inverse (the 6-bit scales use all bits of scales_l and scales_h, so re-encoding gives
// back the file's bytes).
void UnpackIQ4XSRow(const PackedLayout& l, const uint8_t* src, int64_t r, int64_t s0, int64_t s1, uint8_t* dst) {
  for (int64_t s = s0; s < s1; ++s) {
    auto* x = reinterpret_cast<BlockIQ4_XS*>(dst + size_t(s - s0) * sizeof(BlockIQ4_XS));
    const uint8_t* u = src + l.UnitAt(s);
    x->d = reinterpret_cast<const uint16_t*>(u + l.d_off)[r];
    x->scales_h = 0;
    std::memset(x->scales_l, 0, sizeof(x->scales_l));
    for (int j = 0; j < 8; ++j) {
      const int ls = int(int8_t(u[l.sc_off + size_t(j) * kPackRows + size_t(r)])) + 32;
      x->scales_l[j / 2] = uint8_t(x->scales_l[j / 2] | ((ls & 0x0F) << (4 * (j % 2))));
      x->scales_h = uint16_t(x->scales_h | ((ls >> 4) << (2 * j)));
    }
    const uint8_t* q = u + l.q_off;
    for (int ch = 0; ch < 32; ++ch) std::memcpy(x->qs + 4 * ch, q + size_t(ch * kPackRows + r) * 4, 4);
  }
}

// The inverse of Q6KValues (blocks.h).
void Q6Encode(const uint8_t* q, BlockQ6_K* x) {
  for (int n = 0; n < 2; ++n) {
    uint8_t* ql = x->ql + 64 * n;
    uint8_t* qh = x->qh + 32 * n;
    const uint8_t* v = q + 128 * n;
    for (int l = 0; l < 32; ++l) {
      ql[l] = uint8_t((v[l] & 0x0F) | ((v[l + 64] & 0x0F) << 4));
      ql[l + 32] = uint8_t((v[l + 32] & 0x0F) | ((v[l + 96] & 0x0F) << 4));
      qh[l] = uint8_t((v[l] >> 4) | ((v[l + 32] >> 4) << 2) | ((v[l + 64] >> 4) << 4) | ((v[l + 96] >> 4) << 6));
    }
  }
}

// Q6_K, per super-block: chunk c = elements 4c..4c+3 (c < 64). Low-nibble vector v (< 32)
// holds chunk v's low 4 bits in its low nibbles and chunk v+32's in its high nibbles; high-bit
// vector u (< 16) holds the top 2 bits of chunks u, u+16, u+32, u+48 at bits 0-1, 2-3, 4-5, 6-7.
void PackQ6KGroup(const PackedLayout& l, const uint8_t* src, size_t stride, int64_t n, uint8_t* dst) {
  for (int64_t r = 0; r < n; ++r) {
    const auto* x = reinterpret_cast<const BlockQ6_K*>(src + size_t(r) * stride);
    for (int64_t s = 0; s < l.nb; ++s) {
      uint8_t* u = dst + l.UnitAt(s);
      reinterpret_cast<uint16_t*>(u + l.d_off)[r] = x[s].d;
      for (int j = 0; j < 16; ++j) u[l.sc_off + size_t(j) * kPackRows + size_t(r)] = uint8_t(x[s].scales[j]);
      uint8_t q[256];
      Q6KValues(x[s], q);
      uint8_t* lo = u + l.q_off;
      uint8_t* hi = u + l.qh_off;
      for (int v = 0; v < 32; ++v) {
        for (int i = 0; i < 4; ++i) {
          lo[size_t(v * kPackRows + r) * 4 + size_t(i)] = uint8_t((q[4 * v + i] & 0x0F) | ((q[4 * (v + 32) + i] & 0x0F) << 4));
        }
      }
      for (int u = 0; u < 16; ++u) {
        for (int i = 0; i < 4; ++i) {
          uint8_t b = 0;
          for (int f = 0; f < 4; ++f) b = uint8_t(b | ((q[4 * (u + 16 * f) + i] >> 4) << (2 * f)));
          hi[size_t(u * kPackRows + r) * 4 + size_t(i)] = b;
        }
      }
    }
  }
}

void UnpackQ6KRow(const PackedLayout& l, const uint8_t* src, int64_t r, int64_t s0, int64_t s1, uint8_t* dst) {
  for (int64_t s = s0; s < s1; ++s) {
    auto* x = reinterpret_cast<BlockQ6_K*>(dst + size_t(s - s0) * sizeof(BlockQ6_K));
    const uint8_t* u = src + l.UnitAt(s);
    x->d = reinterpret_cast<const uint16_t*>(u + l.d_off)[r];
    for (int j = 0; j < 16; ++j) x->scales[j] = int8_t(u[l.sc_off + size_t(j) * kPackRows + size_t(r)]);
    const uint8_t* lo = u + l.q_off;
    const uint8_t* hi = u + l.qh_off;
    uint8_t q[256];
    for (int c = 0; c < 64; ++c) {
      for (int i = 0; i < 4; ++i) {
        const uint8_t nib = lo[size_t((c % 32) * kPackRows + r) * 4 + size_t(i)];
        const uint8_t hb = hi[size_t((c % 16) * kPackRows + r) * 4 + size_t(i)];
        q[4 * c + i] = uint8_t(((c < 32 ? nib : nib >> 4) & 0x0F) | (((hb >> (2 * (c / 16))) & 3) << 4));
      }
    }
    Q6Encode(q, x);
  }
}

// The inverse for super-blocks [s0, s1) of row r (the 12-byte scale encoding uses all 96 bits,
// so re-encoding the unpacked values gives back the file's bytes).
void UnpackQ4KRow(const PackedLayout& l, const uint8_t* src, int64_t r, int64_t s0, int64_t s1, uint8_t* dst) {
  for (int64_t s = s0; s < s1; ++s) {
    auto* x = reinterpret_cast<BlockQ4_K*>(dst + size_t(s - s0) * sizeof(BlockQ4_K));
    const uint8_t* u = src + l.UnitAt(s);
    x->d = reinterpret_cast<const uint16_t*>(u + l.d_off)[r];
    x->dmin = reinterpret_cast<const uint16_t*>(u + l.dmin_off)[r];
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = u[l.sc_off + size_t(j) * kPackRows + size_t(r)];
      mn[j] = u[l.mn_off + size_t(j) * kPackRows + size_t(r)];
    }
    for (int j = 0; j < 4; ++j) {
      x->scales[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
      x->scales[j + 4] = uint8_t(mn[j] | ((mn[j + 4] >> 4) << 6));
      x->scales[j + 8] = uint8_t((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
    }
    const uint8_t* q = u + l.q_off;
    for (int ch = 0; ch < 32; ++ch) std::memcpy(x->qs + 4 * ch, q + size_t(ch * kPackRows + r) * 4, 4);
  }
}

}  // namespace

bool IsPackable(GgmlType t) {
  bool valid = false;
  GetPackedLayout(t, 256, &valid);  // a row length every packable type's blocks divide
  return valid;
}

size_t PackedGroupBytes(GgmlType t, int64_t k) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  return valid ? l.group : 0;
}

void PackDecodeGroup(GgmlType t, const void* src, size_t src_stride, int64_t k, int64_t n, void* dst_group) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  if (!valid) return;
  auto* dst = static_cast<uint8_t*>(dst_group);
  std::memset(dst, 0, l.group);  // padding rows: scales 0, quants 0, no fifth bits
  if (l.q4_k) {
    PackQ4KGroup(l, static_cast<const uint8_t*>(src), src_stride, n, dst);
    return;
  }
  if (l.q6_k) {
    PackQ6KGroup(l, static_cast<const uint8_t*>(src), src_stride, n, dst);
    return;
  }
  if (l.iq4_xs) {
    PackIQ4XSGroup(l, static_cast<const uint8_t*>(src), src_stride, n, dst);
    return;
  }
  if (l.eight_bit) {
    for (int64_t r = n; r < kPackRows; ++r) {  // a padding row's quant 0 is stored as 128
      for (int64_t b = 0; b < l.nb; ++b) {
        for (int c = 0; c < 8; ++c) std::memset(dst + l.Q(b) + size_t(c * kPackRows + r) * 4, 0x80, 4);
      }
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* row = static_cast<const uint8_t*>(src) + size_t(r) * src_stride;
    for (int64_t b = 0; b < l.nb; ++b) {
      const uint8_t* blk = row + size_t(b) * l.block_bytes;
      std::memcpy(dst + l.D(b) + ScaleBytes(l) * size_t(r), blk, ScaleBytes(l));
      if (l.has_min) std::memcpy(dst + l.M(b) + 2 * r, blk + MinAt(), 2);
      uint8_t* qb = dst + l.Q(b);
      if (l.eight_bit) {
        for (int c = 0; c < 8; ++c) {  // 4 quants at a time, each biased by +128
          uint32_t v;
          std::memcpy(&v, blk + 2 + 4 * c, 4);
          v ^= 0x80808080u;
          std::memcpy(qb + size_t(c * kPackRows + r) * 4, &v, 4);
        }
        continue;
      }
      const uint8_t* qs = blk + QsAt(l);
      for (int c = 0; c < 4; ++c) std::memcpy(qb + size_t(c * kPackRows + r) * 4, qs + 4 * c, 4);
      if (l.has_high) {
        uint32_t qh;
        std::memcpy(&qh, blk + QhAt(l), 4);
        auto* h = reinterpret_cast<uint64_t*>(dst + l.H(b));
        for (int c = 0; c < 8; ++c) h[c] |= uint64_t((qh >> (4 * c)) & 0xF) << (4 * r);
      }
    }
  }
}

namespace {

// Blocks [b0, b1) of row r of a group back in the file's format (dst: (b1 - b0) blocks).
void UnpackRowBlocks(const PackedLayout& l, const uint8_t* src, int64_t r, int64_t b0, int64_t b1, uint8_t* dst) {
  if (l.q4_k) {
    UnpackQ4KRow(l, src, r, b0, b1, dst);
    return;
  }
  if (l.q6_k) {
    UnpackQ6KRow(l, src, r, b0, b1, dst);
    return;
  }
  if (l.iq4_xs) {
    UnpackIQ4XSRow(l, src, r, b0, b1, dst);
    return;
  }
  for (int64_t b = b0; b < b1; ++b) {
    uint8_t* blk = dst + size_t(b - b0) * l.block_bytes;
    std::memcpy(blk, src + l.D(b) + ScaleBytes(l) * size_t(r), ScaleBytes(l));
    if (l.has_min) std::memcpy(blk + MinAt(), src + l.M(b) + 2 * r, 2);
    const uint8_t* qb = src + l.Q(b);
    if (l.eight_bit) {
      for (int c = 0; c < 8; ++c) {
        uint32_t v;
        std::memcpy(&v, qb + size_t(c * kPackRows + r) * 4, 4);
        v ^= 0x80808080u;
        std::memcpy(blk + 2 + 4 * c, &v, 4);
      }
      continue;
    }
    for (int c = 0; c < 4; ++c) std::memcpy(blk + QsAt(l) + 4 * c, qb + size_t(c * kPackRows + r) * 4, 4);
    if (l.has_high) {
      uint32_t qh = 0;  // mask c holds bits 4c..4c+3 of every row, row r at bits 4r..4r+3
      const auto* h = reinterpret_cast<const uint64_t*>(src + l.H(b));
      for (int c = 0; c < 8; ++c) qh |= uint32_t((h[c] >> (4 * r)) & 0xF) << (4 * c);
      std::memcpy(blk + QhAt(l), &qh, 4);
    }
  }
}

}  // namespace

void UnpackDecodeGroup(GgmlType t, const void* group, int64_t k, int64_t n, void* dst, size_t dst_stride) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  if (!valid) return;
  for (int64_t r = 0; r < n; ++r) {
    UnpackRowBlocks(l, static_cast<const uint8_t*>(group), r, 0, l.nb,
                    static_cast<uint8_t*>(dst) + size_t(r) * dst_stride);
  }
}

void DequantizePackedRow(GgmlType t, const void* packed, int64_t k, int64_t row, float* dst) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  if (!valid) return;
  const auto* group = static_cast<const uint8_t*>(packed) + size_t(row / kPackRows) * l.group;
  constexpr int64_t kChunk = 16;  // blocks per pass: a small stack buffer, no allocation
  uint8_t blocks[kChunk * sizeof(BlockQ6_K)];  // the largest packable block
  const int64_t per_block = (l.q4_k || l.q6_k || l.iq4_xs) ? 256 : 32;
  for (int64_t b0 = 0; b0 < l.nb; b0 += kChunk) {
    const int64_t b1 = l.nb - b0 < kChunk ? l.nb : b0 + kChunk;
    UnpackRowBlocks(l, group, row % kPackRows, b0, b1, blocks);
    DequantizeRow(t, blocks, dst + b0 * per_block, (b1 - b0) * per_block);
  }
}

void StageActivations(const uint8_t* a, bool q8_1, int64_t b0, int64_t n, int32_t offset, StagedActivations* st) {
  StageActivationsWith([](uint16_t h) { return Fp16ToFp32(h); }, a, q8_1, b0, n, offset, st);
}

bool ParseDecodePrefetch(const char* v, PrefetchPlan* plan) {
  if (v == nullptr) return false;
  const std::string s(v);
  if (s == "off") {
    *plan = PrefetchPlan{0, true};
    return true;
  }
  if (s.size() < 2 || s[0] != 'l' || (s[1] != '1' && s[1] != '2') || s.size() == 3) return false;
  if (s.size() > 2 && s[2] != ':') return false;
  size_t ahead = 8192;
  if (s.size() > 3) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(s.c_str() + 3, &end, 10);
    if (*end != '\0' || n == 0 || n > (size_t(1) << 20)) return false;
    ahead = size_t(n);
  }
  *plan = PrefetchPlan{ahead, s[1] == '1'};
  return true;
}

const PrefetchPlan& DecodePrefetchPlan(GgmlType t) {
  // [0]: the 32-element formats and Q4_K; [1]: Q6_K (the most arithmetic per byte).
  static const struct Plans {
    PrefetchPlan p[2];
    Plans() {
      PrefetchPlan forced;
      if (ParseDecodePrefetch(env::DecodePrefetch(), &forced)) {
        p[0] = p[1] = forced;
      } else if (CpuIsZen4()) {  // the hardware prefetchers alone stream at the read bandwidth
        p[0] = PrefetchPlan{0, true};
        p[1] = PrefetchPlan{8192, false};
      } else {
        p[0] = p[1] = PrefetchPlan{8192, true};
      }
    }
  } plans;
  return plans.p[t == GgmlType::Q6_K ? 1 : 0];
}

namespace ref {
void GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y) {
  bool valid = false;
  const PackedLayout l = GetPackedLayout(t, k, &valid);
  if (!valid) return;
  const VecDotFn dot = ref::GetVecDotFn(t);
  const size_t row_bytes = size_t(l.nb) * l.block_bytes;
  uint8_t* scratch = new uint8_t[row_bytes * kPackRows];
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t n = rows - g * kPackRows < kPackRows ? rows - g * kPackRows : kPackRows;
    UnpackDecodeGroup(t, static_cast<const uint8_t*>(packed) + size_t(g) * l.group, k, n, scratch, row_bytes);
    for (int64_t r = 0; r < n; ++r) y[(g - g0) * kPackRows + r] = dot(k, scratch + size_t(r) * row_bytes, a);
  }
  delete[] scratch;
}
}  // namespace ref

}  // namespace zf::quant
