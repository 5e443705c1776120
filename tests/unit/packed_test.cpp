// The row-interleaved decode layouts (quant/packed.h) for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
// MXFP4, Q4_K, Q6_K and IQ4_XS: packing is exactly invertible, a packed row dequantizes like the file's row, and the
// dispatched kernel (AVX-512, AVX2 or NEON) and the scalar reference match one VecDot per row
// on tails (rows not a multiple of 16), group sub-ranges (how threads split the work), long
// rows (several staging passes), extreme quants and extreme scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/random_data.h"
#include "quant/kernels.h"
#include "quant/packed.h"
#include "quant/packed_layout.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

const GgmlType kTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0,  GgmlType::Q4_1,  GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::IQ4_XS};

// The formats of 256-element super-blocks (rows a multiple of 256).
bool SuperBlocks(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q6_K || t == GgmlType::IQ4_XS; }

std::vector<uint8_t> Activation(GgmlType t, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k));
  for (float& v : x) v = nd(rng);
  const GgmlType at = VecDotType(t);
  std::vector<uint8_t> a(RowSize(at, k));
  QuantizeActivations(at, x.data(), a.data(), k);
  return a;
}

// A packed matrix in a 64-byte aligned buffer (the kernels use aligned loads).
struct Packed {
  std::vector<uint8_t> buf;
  const uint8_t* data() const { return buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64; }
};

Packed Pack(GgmlType t, const std::vector<uint8_t>& w, int64_t rows, int64_t k) {
  const size_t row = RowSize(t, k), gbytes = PackedGroupBytes(t, k);
  EXPECT_EQ(gbytes % 64, 0u);
  // Exactly the file's bytes of 16 rows, plus: a padding block when a 32-element format has an
  // odd block count (units of 2 blocks); per super-block, Q4_K's scales unpacked (12 -> 16
  // bytes per row), Q6_K's 32 bytes that align its unit, IQ4_XS's 6-bit scales a byte each (6
  // -> 8 bytes per row) and 32 bytes of padding after d.
  const bool k_quant = SuperBlocks(t);
  const size_t blocks = k_quant ? size_t(k / 256) : size_t(k / 32), block = row / blocks;
  const size_t padded = k_quant ? blocks : (blocks + 1) / 2 * 2;
  // MXFP4: its 1-byte scales in F16's 2 bytes per row.
  const size_t extra = t == GgmlType::Q4_K || t == GgmlType::IQ4_XS ? 64
                       : t == GgmlType::Q6_K                         ? 32
                       : t == GgmlType::MXFP4                        ? 16
                                                                     : 0;
  EXPECT_EQ(gbytes, padded * (size_t(kPackRows) * block + extra));
  Packed p;
  p.buf.resize(size_t(PackedGroups(rows)) * gbytes + 64);
  uint8_t* base = const_cast<uint8_t*>(p.data());
  for (int64_t g = 0; g < PackedGroups(rows); ++g) {
    const int64_t n = std::min<int64_t>(kPackRows, rows - g * kPackRows);
    PackDecodeGroup(t, w.data() + size_t(g * kPackRows) * row, row, k, n, base + size_t(g) * gbytes);
  }
  return p;
}

// The product under test: the dispatched one, or one ISA's kernel called directly (so an
// AVX-512 machine also checks the AVX2 kernels, and a dot-product aarch64 CPU the baseline
// NEON ones).
using GemvFn = void (*)(GgmlType, int64_t, const void*, int64_t, int64_t, int64_t, const void*, float*);

#if defined(__x86_64__) || defined(__i386__)
void Avx2Gemv(GgmlType t, int64_t k, const void* p, int64_t g0, int64_t g1, int64_t rows, const void* a, float* y) {
  ASSERT_TRUE(avx2::GemvPacked(t, k, p, g0, g1, rows, a, y)) << TypeName(t);
}
#endif
#if defined(__aarch64__)
void AsimdGemv(GgmlType t, int64_t k, const void* p, int64_t g0, int64_t g1, int64_t rows, const void* a, float* y) {
  ASSERT_TRUE(asimd::GemvPacked(t, k, p, g0, g1, rows, a, y)) << TypeName(t);
}
#endif

// The lower-level kernels this CPU can run besides the dispatched ones.
std::vector<GemvFn> DirectKernels() {
#if defined(__x86_64__) || defined(__i386__)
  if (CpuHasAvx2Fma16()) return {Avx2Gemv};
#elif defined(__aarch64__)
  return {AsimdGemv};
#endif
  return {};
}

void CheckProduct(GgmlType t, int64_t rows, int64_t k, float scale, GemvFn gemv = GemvPacked) {
  SCOPED_TRACE(std::string(TypeName(t)) + " rows " + std::to_string(rows) + " k " + std::to_string(k));
  const size_t row = RowSize(t, k);
  const std::vector<uint8_t> w = testing::RandomQuantRows(t, rows, k, scale, 7), a = Activation(t, k, 8);
  const Packed p = Pack(t, w, rows, k);
  const int64_t groups = PackedGroups(rows);
  std::vector<float> fast(size_t(groups * kPackRows), -1.0f), slow(fast);
  gemv(t, k, p.data(), 0, groups, rows, a.data(), fast.data());
  ref::GemvPacked(t, k, p.data(), 0, groups, rows, a.data(), slow.data());
  for (int64_t r = 0; r < rows; ++r) {
    const float want = VecDot(t, k, w.data() + row * size_t(r), a.data());
    const float tol = 1e-4f * (std::fabs(want) + float(k) * scale);
    ASSERT_NEAR(fast[size_t(r)], want, tol) << "row " << r;
    ASSERT_EQ(slow[size_t(r)], ref::VecDot(t, k, w.data() + row * size_t(r), a.data())) << "row " << r;
  }
  for (size_t r = size_t(rows); r < fast.size(); ++r) {
    EXPECT_EQ(fast[r], -1.0f) << "padding row " << r << " was written";
    EXPECT_EQ(slow[r], -1.0f) << "padding row " << r << " was written";
  }
  if (groups >= 3) {  // a sub-range writes only its own rows, from y[0]
    std::vector<float> part(size_t(kPackRows), -1.0f);
    gemv(t, k, p.data(), 1, 2, rows, a.data(), part.data());
    for (int64_t r = 0; r < kPackRows; ++r) EXPECT_EQ(part[size_t(r)], fast[size_t(kPackRows + r)]);
  }
}

TEST(Packed, RoundTripIsExactAndRowsDequantizeAlike) {
  for (GgmlType t : kTypes) {
    for (int64_t rows : {1, 16, 21}) {
      const int64_t k = SuperBlocks(t) ? 512 : 96;
      const size_t row = RowSize(t, k);
      const std::vector<uint8_t> w = testing::RandomQuantRows(t, rows, k, 1.0f, 3);
      const Packed p = Pack(t, w, rows, k);
      std::vector<uint8_t> back(w.size(), 0xAB);
      for (int64_t g = 0; g < PackedGroups(rows); ++g) {
        const int64_t n = std::min<int64_t>(kPackRows, rows - g * kPackRows);
        UnpackDecodeGroup(t, p.data() + size_t(g) * PackedGroupBytes(t, k), k, n, back.data() + size_t(g * kPackRows) * row,
                    row);
      }
      EXPECT_EQ(back, w) << TypeName(t) << " rows " << rows;
      std::vector<float> got(static_cast<size_t>(k)), want(static_cast<size_t>(k));
      for (int64_t r = 0; r < rows; ++r) {
        DequantizePackedRow(t, p.data(), k, r, got.data());
        DequantizeRow(t, w.data() + row * size_t(r), want.data(), k);
        ASSERT_EQ(got, want) << TypeName(t) << " row " << r;
      }
    }
  }
}

TEST(Packed, ProductMatchesVecDotWithTails) {
  for (GgmlType t : kTypes) {
    for (int64_t rows : {1, 15, 16, 17, 50}) {
      for (int64_t k : {32, 64, 576, 640, 1024}) {
        if (PackedGroupBytes(t, k) != 0) CheckProduct(t, rows, k, 1.0f);  // super-blocks: k % 256 == 0
      }
    }
  }
}

TEST(Packed, LongRowsAndExtremeScales) {
  for (GgmlType t : kTypes) {
    CheckProduct(t, 20, 256 * 40, 1.0f);  // more blocks than one staging pass holds
    CheckProduct(t, 33, 2048, 1e-4f);
    CheckProduct(t, 33, 2048, 1e3f);
  }
}

TEST(Packed, LowerLevelKernelsMatchVecDot) {
  const std::vector<GemvFn> kernels = DirectKernels();
  if (kernels.empty()) GTEST_SKIP() << "no lower-level SIMD kernel runs on this CPU";
  for (GemvFn gemv : kernels) {
    for (GgmlType t : kTypes) {
      for (int64_t rows : {1, 8, 9, 17, 50}) {
        for (int64_t k : {32, 64, 640, 1024}) {
          if (PackedGroupBytes(t, k) != 0) CheckProduct(t, rows, k, 1.0f, gemv);
        }
      }
      CheckProduct(t, 20, 256 * 40, 1.0f, gemv);
      CheckProduct(t, 33, 2048, 1e-4f, gemv);
      CheckProduct(t, 33, 2048, 1e3f, gemv);
    }
  }
}

#if defined(__aarch64__)
// On aarch64 every CPU runs NEON packed kernels (SDOT ones where it has the dot product; the
// tests above check them through the dispatched GemvPacked) unless ZF_NO_NEON is set.
TEST(Packed, Aarch64DispatchPicksTheNeonLevel) {
  const bool neon = std::getenv("ZF_NO_NEON") == nullptr;
  EXPECT_STREQ(ActiveIsa(), !neon ? "scalar" : CpuHasNeonDotprod() ? "neon-dotprod" : "neon");
  for (GgmlType t : kTypes) EXPECT_EQ(PackedGemvAvailable(t), neon) << TypeName(t);
}
#endif

TEST(Packed, Mxfp4ScalesMatchE8M0AcrossTheExponentRange) {
  // Every row one exponent, from the subnormal scales (e = 0, 1) to the top of the range: the
  // kernels rebuild 2^(e - 128) from the byte and must agree with E8M0ToFp32Half.
  const int64_t k = 64, rows = 32;
  const size_t row = RowSize(GgmlType::MXFP4, k);
  std::vector<uint8_t> w = testing::RandomQuantRows(GgmlType::MXFP4, rows, k, 1.0f, 11);
  const uint8_t exps[rows] = {0, 1, 2, 3, 4, 5, 10, 20, 40, 63, 64, 100, 120, 126, 127, 128,
                              129, 130, 140, 150, 160, 170, 180, 190, 200, 210, 220, 230, 240, 245, 248, 250};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) w[size_t(r) * row + size_t(b) * sizeof(BlockMXFP4)] = exps[r];
  }
  const std::vector<uint8_t> a = Activation(GgmlType::MXFP4, k, 12);
  const Packed p = Pack(GgmlType::MXFP4, w, rows, k);
  std::vector<GemvFn> kernels = DirectKernels();
  kernels.push_back(GemvPacked);
  for (GemvFn gemv : kernels) {
    std::vector<float> y(static_cast<size_t>(rows));
    gemv(GgmlType::MXFP4, k, p.data(), 0, PackedGroups(rows), rows, a.data(), y.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float want = VecDot(GgmlType::MXFP4, k, w.data() + row * size_t(r), a.data());
      ASSERT_NEAR(y[size_t(r)], want, 1e-5f * std::fabs(want) + 1e-44f) << "exponent " << int(exps[r]);
    }
  }
}

TEST(Packed, ExtremeQ8QuantsAreExact) {
  // Weights of -128 (allowed in files) and 127 against activations of +-127: the +128 bias and
  // its correction must stay exact in int32.
  const int64_t k = 64, rows = 16;
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> w(row * rows), a(row);
  const uint16_t one = Fp32ToFp16(1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      uint8_t* blk = w.data() + row * size_t(r) + size_t(b) * 34;
      std::memcpy(blk, &one, 2);
      for (int i = 0; i < 32; ++i) blk[2 + i] = uint8_t(r % 2 ? 0x80 : 0x7F);  // -128 or 127
    }
  }
  for (int64_t b = 0; b < k / 32; ++b) {
    std::memcpy(a.data() + size_t(b) * 34, &one, 2);
    for (int i = 0; i < 32; ++i) a[size_t(b) * 34 + 2 + size_t(i)] = uint8_t(i % 2 ? 127 : -127);
  }
  const Packed p = Pack(GgmlType::Q8_0, w, rows, k);
  std::vector<float> y(rows);
  std::vector<GemvFn> kernels = DirectKernels();
  kernels.push_back(GemvPacked);
  for (GemvFn gemv : kernels) {
    gemv(GgmlType::Q8_0, k, p.data(), 0, 1, rows, a.data(), y.data());
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(y[size_t(r)], VecDot(GgmlType::Q8_0, k, w.data() + row * size_t(r), a.data())) << "row " << r;
    }
  }
}

// GemvPackedMulti (batched decode) must give every token exactly, bit for bit, what GemvPacked
// gives it alone, whatever the batch size and the token's place in it (batch invariance): the
// dispatched pair, and on x86 each ISA's pair called directly (an AVX-512 machine checks the
// AVX2 kernels too). Rows not a multiple of 16, group sub-ranges from g0 > 0, rows of several
// super-blocks and of several staging passes, 1..17 tokens (17: more than one batch chunk).
using MultiFn = void (*)(GgmlType, int64_t, const void*, int64_t, int64_t, int64_t, const void* const*,
                         float* const*, int32_t);
struct GemvPair {
  const char* name;
  GemvFn one;
  MultiFn multi;
};

#if defined(__x86_64__) || defined(__i386__)
void Avx512Gemv(GgmlType t, int64_t k, const void* p, int64_t g0, int64_t g1, int64_t rows, const void* a, float* y) {
  ASSERT_TRUE(avx512::GemvPacked(t, k, p, g0, g1, rows, a, y)) << TypeName(t);
}
void Avx512Multi(GgmlType t, int64_t k, const void* p, int64_t g0, int64_t g1, int64_t rows, const void* const* a,
                 float* const* y, int32_t n) {
  ASSERT_TRUE(avx512::GemvPackedMulti(t, k, p, g0, g1, rows, a, y, n)) << TypeName(t);
}
void Avx2Multi(GgmlType t, int64_t k, const void* p, int64_t g0, int64_t g1, int64_t rows, const void* const* a,
               float* const* y, int32_t n) {
  ASSERT_TRUE(avx2::GemvPackedMulti(t, k, p, g0, g1, rows, a, y, n)) << TypeName(t);
}
#endif

std::vector<GemvPair> MultiPairs() {
  std::vector<GemvPair> pairs = {{"dispatched", GemvPacked, GemvPackedMulti}};
#if defined(__x86_64__) || defined(__i386__)
  if (CpuHasAvx512Vnni()) pairs.push_back({"avx512", Avx512Gemv, Avx512Multi});
  if (CpuHasAvx2Fma16()) pairs.push_back({"avx2", Avx2Gemv, Avx2Multi});
#endif
  return pairs;
}

void CheckMultiMatchesSingle(const GemvPair& pair, GgmlType t, int64_t rows, int64_t k) {
  SCOPED_TRACE(std::string(pair.name) + " " + TypeName(t) + " rows " + std::to_string(rows) + " k " +
               std::to_string(k));
  constexpr int32_t kMaxTokens = 17;
  const std::vector<uint8_t> w = testing::RandomQuantRows(t, rows, k, 1.0f, 11);
  const Packed p = Pack(t, w, rows, k);
  const int64_t groups = PackedGroups(rows);
  std::vector<std::vector<uint8_t>> acts;
  for (int32_t i = 0; i < kMaxTokens; ++i) acts.push_back(Activation(t, k, 100 + uint32_t(i)));
  for (int64_t g0 : {int64_t{0}, int64_t{1}}) {
    const size_t out = size_t((groups - g0) * kPackRows);
    // Each token alone.
    std::vector<std::vector<float>> want(kMaxTokens, std::vector<float>(out, -1.0f));
    for (int32_t i = 0; i < kMaxTokens; ++i) pair.one(t, k, p.data(), g0, groups, rows, acts[size_t(i)].data(), want[size_t(i)].data());
    for (int32_t n = 1; n <= kMaxTokens; ++n) {
      // Token i of the batch is activation (i + n) % 17, so a row meets different neighbours
      // and places from one batch size to the next.
      std::vector<std::vector<float>> got(size_t(n), std::vector<float>(out, -1.0f));
      std::vector<const void*> a;
      std::vector<float*> y;
      for (int32_t i = 0; i < n; ++i) {
        a.push_back(acts[size_t((i + n) % kMaxTokens)].data());
        y.push_back(got[size_t(i)].data());
      }
      pair.multi(t, k, p.data(), g0, groups, rows, a.data(), y.data(), n);
      for (int32_t i = 0; i < n; ++i) {
        const std::vector<float>& ref = want[size_t((i + n) % kMaxTokens)];
        ASSERT_EQ(std::memcmp(got[size_t(i)].data(), ref.data(), out * sizeof(float)), 0)
            << "g0 " << g0 << " n " << n << " token " << i;
      }
    }
  }
}

TEST(Packed, MultiTokenProductIsBitIdenticalToOneTokenAtATime) {
  for (const GemvPair& pair : MultiPairs()) {
    for (GgmlType t : kTypes) {
      const bool k_quant = SuperBlocks(t);
      // Super-block formats: 1, 3 and 40 super-blocks; 32-element formats: an odd block count, and 261
      // blocks (three staging passes of kStagedBlocks = 128, the last one odd).
      const std::vector<int64_t> ks = k_quant ? std::vector<int64_t>{256, 768, 256 * 40}
                                              : std::vector<int64_t>{96, 640, 32 * 261};
      for (int64_t k : ks) CheckMultiMatchesSingle(pair, t, 37, k);
    }
  }
}

TEST(Packed, MultiTokenProductMatchesVecDot) {
  // The batched product is also right, not just consistent: every token against VecDot.
  for (const GemvPair& pair : MultiPairs()) {
    for (GgmlType t : kTypes) {
      const int64_t k = SuperBlocks(t) ? 512 : 320, rows = 21;
      const size_t row = RowSize(t, k);
      const std::vector<uint8_t> w = testing::RandomQuantRows(t, rows, k, 1.0f, 5);
      const Packed p = Pack(t, w, rows, k);
      const int32_t n = 6;
      std::vector<std::vector<uint8_t>> acts;
      std::vector<std::vector<float>> got(n, std::vector<float>(size_t(PackedGroups(rows) * kPackRows), -1.0f));
      std::vector<const void*> a;
      std::vector<float*> y;
      for (int32_t i = 0; i < n; ++i) acts.push_back(Activation(t, k, 300 + uint32_t(i)));
      for (int32_t i = 0; i < n; ++i) {
        a.push_back(acts[size_t(i)].data());
        y.push_back(got[size_t(i)].data());
      }
      pair.multi(t, k, p.data(), 0, PackedGroups(rows), rows, a.data(), y.data(), n);
      for (int32_t i = 0; i < n; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          const float want = VecDot(t, k, w.data() + row * size_t(r), acts[size_t(i)].data());
          ASSERT_NEAR(got[size_t(i)][size_t(r)], want, 1e-4f * (std::fabs(want) + float(k)))
              << pair.name << " " << TypeName(t) << " token " << i << " row " << r;
        }
        for (size_t r = size_t(rows); r < got[size_t(i)].size(); ++r) {
          EXPECT_EQ(got[size_t(i)][r], -1.0f) << "padding row " << r << " was written";
        }
      }
    }
  }
}

// ZF_DECODE_PREFETCH: the values it takes, and everything else falls back to the CPU's plan.
TEST(Packed, DecodePrefetchSwitchParses) {
  PrefetchPlan p{123, false};
  ASSERT_TRUE(ParseDecodePrefetch("off", &p));
  EXPECT_EQ(p.ahead, 0u);
  ASSERT_TRUE(ParseDecodePrefetch("l1", &p));
  EXPECT_EQ(p.ahead, 8192u);
  EXPECT_TRUE(p.into_l1);
  ASSERT_TRUE(ParseDecodePrefetch("l2:16384", &p));
  EXPECT_EQ(p.ahead, 16384u);
  EXPECT_FALSE(p.into_l1);
  for (const char* bad : {"", "auto", "l3", "l1:", "l1:0", "l1:12x", "l2:99999999", "L1", "l1 ", "on"}) {
    PrefetchPlan q{123, false};
    EXPECT_FALSE(ParseDecodePrefetch(bad, &q)) << bad;
    EXPECT_EQ(q.ahead, 123u) << bad;
  }
  EXPECT_FALSE(ParseDecodePrefetch(nullptr, &p));
  // Whatever the plan, it belongs to the kernels' types: a Q6_K plan and one for the rest.
  EXPECT_LE(DecodePrefetchPlan(GgmlType::Q6_K).ahead, size_t(1) << 20);
  EXPECT_LE(DecodePrefetchPlan(GgmlType::Q4_K).ahead, size_t(1) << 20);
}

}  // namespace
}  // namespace zf::quant
