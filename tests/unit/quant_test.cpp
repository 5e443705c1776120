// Tests of src/quant: dequantization and activation quantization against vectors computed by the
// gguf Python package (scripts/gen_quant_vectors.py), dot products against double-precision dots,
// the SIMD kernels against the scalar reference, and the fp16/bf16 conversions.
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

// ---------------------------------------------------------------- helpers

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

struct Vectors {
  GgmlType type = GgmlType::F32;
  std::vector<uint8_t> bytes;
  std::vector<float> floats;
};

// Reads a "ZQV1" file written by scripts/gen_quant_vectors.py.
Vectors Load(const std::string& name) {
  Vectors v;
  const std::string path = std::string(ZF_TEST_DATA_DIR) + "/quant/" + name;
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing " << path << " (run scripts/gen_quant_vectors.py)";
  char magic[4] = {};
  uint32_t hdr[3] = {};
  f.read(magic, 4);
  f.read(reinterpret_cast<char*>(hdr), sizeof(hdr));
  EXPECT_EQ(std::string(magic, 4), "ZQV1") << path;
  v.type = static_cast<GgmlType>(hdr[0]);
  v.floats.resize(hdr[1]);
  v.bytes.resize(hdr[2]);
  f.read(reinterpret_cast<char*>(v.bytes.data()), hdr[2]);
  f.read(reinterpret_cast<char*>(v.floats.data()), static_cast<std::streamsize>(hdr[1]) * 4);
  EXPECT_TRUE(f.good()) << "truncated " << path;
  EXPECT_EQ(v.bytes.size(), RowSize(v.type, static_cast<int64_t>(v.floats.size()))) << path;
  return v;
}

// Bitwise float equality that treats any two NaNs as equal.
::testing::AssertionResult SameFloat(float got, float want) {
  if (std::isnan(got) && std::isnan(want)) return ::testing::AssertionSuccess();
  if (Bits(got) == Bits(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << " (0x" << std::hex << Bits(got)
                                       << ") want " << want << " (0x" << Bits(want) << ")";
}

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                                 GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                 GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                 GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

int64_t BlockSize(GgmlType t) { return GetTypeTraits(t)->block_size; }

// Byte offsets of the fp16 scale fields (d, dmin / m) inside one block.
std::vector<int> HalfFieldOffsets(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS:
      return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q6_K: return {208};
    default: return {};
  }
}

enum class QuantFill { kRandom, kAllOnes, kAllZero, kQ8Min };

// A weight row of n elements: random (or patterned) quant bytes; every fp16 scale field is `d`
// when fixed_d, else random in +-[1e-3, 5e-2]. Float types: normal values (times d if fixed_d).
std::vector<uint8_t> MakeWeights(GgmlType t, int64_t n, std::mt19937& rng, QuantFill fill,
                                 bool fixed_d = false, float d = 0.0f) {
  std::vector<uint8_t> w(RowSize(t, n));
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng) * (fixed_d ? d : 1.0f);
      if (t == GgmlType::F32) std::memcpy(&w[4 * i], &v, 4);
      const uint16_t h = t == GgmlType::F16 ? Fp32ToFp16(v) : Fp32ToBf16(v);
      if (t != GgmlType::F32) std::memcpy(&w[2 * i], &h, 2);
    }
    return w;
  }
  for (auto& b : w) {
    switch (fill) {
      case QuantFill::kRandom: b = static_cast<uint8_t>(byte(rng)); break;
      case QuantFill::kAllOnes: b = 0xFF; break;
      case QuantFill::kAllZero: b = 0x00; break;
      case QuantFill::kQ8Min: b = 0x80; break;  // int8 -128 in Q8_0 quants
    }
  }
  const size_t bs = GetTypeTraits(t)->type_size;
  std::uniform_real_distribution<float> mag(1e-3f, 5e-2f);
  if (t == GgmlType::MXFP4) {  // the E8M0 exponent byte: 2^(e-128) near d, or the same range
    for (size_t off = 0; off < w.size(); off += bs) {
      int e = fixed_d ? (d == 0.0f ? 0 : 128 + std::ilogb(d)) : 128 + std::ilogb(mag(rng));
      w[off] = static_cast<uint8_t>(std::min(252, std::max(0, e)));
    }
    return w;
  }
  for (size_t off = 0; off < w.size(); off += bs) {
    for (int f : HalfFieldOffsets(t)) {
      const float v = fixed_d ? d : mag(rng) * (byte(rng) & 1 ? 1.0f : -1.0f);
      const uint16_t h = Fp32ToFp16(v);
      std::memcpy(&w[off + f], &h, 2);
    }
  }
  return w;
}

std::vector<float> RandomFloats(int64_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

std::vector<uint8_t> Quantize(GgmlType act, const std::vector<float>& x) {
  std::vector<uint8_t> q(RowSize(act, static_cast<int64_t>(x.size())));
  QuantizeActivations(act, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> Dequantize(GgmlType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> out(n);
  ref::DequantizeRow(t, q.data(), out.data(), n);
  return out;
}

// Double-precision dot of two float rows, plus the sum of |products| (the scale of the
// rounding error a float accumulation of the same terms can have).
struct Exact {
  double dot = 0.0;
  double mag = 0.0;
};
Exact ExactDot(const std::vector<float>& a, const std::vector<float>& b) {
  Exact e;
  for (size_t i = 0; i < a.size(); ++i) {
    const double p = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    e.dot += p;
    e.mag += std::fabs(p);
  }
  return e;
}

// The weights' offset part, for formats whose dot product carries a separate min term computed in
// float (Q4_1/Q5_1: m * s, K quants: dmin * m * bsums): those terms cancel against the main part,
// so rounding scales with |main| + |min| rather than with |w . a|.
double MinTermMagnitude(GgmlType t, const std::vector<uint8_t>& w, const std::vector<float>& a) {
  const int64_t n = static_cast<int64_t>(a.size());
  double mag = 0.0;
  if (t == GgmlType::Q4_1 || t == GgmlType::Q5_1) {
    const size_t bs = GetTypeTraits(t)->type_size;
    for (int64_t b = 0; b < n / kQK; ++b) {
      uint16_t m;
      std::memcpy(&m, &w[b * bs + 2], 2);
      for (int j = 0; j < kQK; ++j) mag += std::fabs(Fp16ToFp32(m) * a[b * kQK + j]);
    }
  } else if (t == GgmlType::Q2_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
    const size_t bs = GetTypeTraits(t)->type_size;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      const uint8_t* blk = &w[b * bs];
      uint16_t dmin;
      std::memcpy(&dmin, blk + (t == GgmlType::Q2_K ? 82 : 2), 2);
      for (int e = 0; e < kQK_K; ++e) {
        int m;
        if (t == GgmlType::Q2_K) {
          m = blk[e / 16] >> 4;
        } else {
          uint8_t sc[8], mm[8];
          UnpackScaleMinK4(blk + 4, sc, mm);
          m = mm[e / 32];
        }
        mag += std::fabs(static_cast<double>(Fp16ToFp32(dmin)) * m * a[b * kQK_K + e]);
      }
    }
  }
  return mag;
}

// Worst-case rounding of a float accumulation of n/block_size block terms (integer parts are
// exact): each term carries a few roundings of its own (scale product, int->float, multiply) and
// every add rounds a partial sum bounded by `mag`, so (blocks + 8) half-ulps of the magnitude.
// Observed errors are ~1e-9 * mag; this bound is ~1e-7..4e-6 * mag.
double DotTolerance(GgmlType t, int64_t n, double mag) {
  const double blocks = static_cast<double>(n / BlockSize(t));
  return (blocks + 8.0) * std::ldexp(1.0, -24) * mag + 1e-30;
}

// ---------------------------------------------------------------- dequantization vectors

TEST(QuantVectors, DequantizeMatchesGgufPy) {
  for (GgmlType t : kWeightTypes) {
    if (t == GgmlType::F32) continue;
    const Vectors v = Load(std::string(TypeName(t)) + ".dq");
    ASSERT_EQ(v.type, t);
    const int64_t n = static_cast<int64_t>(v.floats.size());
    ASSERT_GT(n, 0);
    std::vector<float> got(n), got_ref(n);
    DequantizeRow(t, v.bytes.data(), got.data(), n);
    ref::DequantizeRow(t, v.bytes.data(), got_ref.data(), n);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      const bool ok = SameFloat(got[i], v.floats[i]) && SameFloat(got_ref[i], v.floats[i]);
      if (!ok) ++bad;
      EXPECT_TRUE(SameFloat(got[i], v.floats[i])) << TypeName(t) << " element " << i;
      EXPECT_TRUE(SameFloat(got_ref[i], v.floats[i])) << TypeName(t) << " element " << i;
    }
  }
}

TEST(QuantVectors, ActivationQuantizationMatchesReference) {
  for (const char* name : {"Q8_0.act", "Q8_1.act", "Q8_K.act", "Q8_K_zero.act", "F16.act", "BF16.act"}) {
    const Vectors v = Load(name);
    const int64_t n = static_cast<int64_t>(v.floats.size());
    std::vector<uint8_t> got(v.bytes.size()), got_ref(v.bytes.size());
    QuantizeActivations(v.type, v.floats.data(), got.data(), n);
    ref::QuantizeActivations(v.type, v.floats.data(), got_ref.data(), n);
    EXPECT_EQ(got_ref, v.bytes) << name << " (scalar reference)";
    EXPECT_EQ(got, v.bytes) << name << " (dispatched: " << ActiveIsa() << ")";
  }
}

TEST(QuantVectors, Q8ActivationFieldsAreConsistent) {
  // Q8_1's s is fp16(d * sum(q)); Q8_K's bsums are the sums of each 16 quants.
  std::mt19937 rng(7);
  const std::vector<float> x = RandomFloats(1024, rng);
  const std::vector<uint8_t> q1 = Quantize(GgmlType::Q8_1, x);
  const BlockQ8_1* b1 = reinterpret_cast<const BlockQ8_1*>(q1.data());
  for (int b = 0; b < 1024 / kQK; ++b) {
    int sum = 0;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      sum += b1[b].qs[j];
      amax = std::fmax(amax, std::fabs(x[b * kQK + j]));
    }
    // s uses the float d = amax / 127 (before its own rounding to fp16).
    EXPECT_EQ(b1[b].d, Fp32ToFp16(amax / 127.0f)) << b;
    EXPECT_EQ(b1[b].s, Fp32ToFp16(static_cast<float>(sum) * (amax / 127.0f))) << b;
  }
  const std::vector<uint8_t> qk = Quantize(GgmlType::Q8_K, x);
  const BlockQ8_K* bk = reinterpret_cast<const BlockQ8_K*>(qk.data());
  for (int b = 0; b < 1024 / kQK_K; ++b) {
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += bk[b].qs[16 * g + j];
      EXPECT_EQ(bk[b].bsums[g], sum);
    }
    // The element of largest magnitude maps to exactly -127 (scale -127/max).
    int best = 0;
    for (int j = 1; j < kQK_K; ++j) {
      if (std::fabs(x[b * kQK_K + j]) > std::fabs(x[b * kQK_K + best])) best = j;
    }
    EXPECT_EQ(bk[b].qs[best], -127);
  }
}

// ---------------------------------------------------------------- dot products

TEST(QuantDot, MatchesDoubleDotOfDequantizedRows) {
  std::mt19937 rng(1234);
  for (GgmlType t : kWeightTypes) {
    const GgmlType act = VecDotType(t);
    for (int64_t n : {256, 1024, 2048}) {
      const std::vector<uint8_t> w = MakeWeights(t, n, rng, QuantFill::kRandom);
      const std::vector<float> x = RandomFloats(n, rng);
      const std::vector<uint8_t> a = Quantize(act, x);
      const std::vector<float> wd = Dequantize(t, w, n);
      const std::vector<float> ad = Dequantize(act, a, n);
      const Exact e = ExactDot(wd, ad);
      double tol = DotTolerance(t, n, e.mag + MinTermMagnitude(t, w, ad));
      if (act == GgmlType::Q8_1) {
        // s = fp16(d * sum q) is itself rounded to half precision (2^-11 relative): the product
        // m * s differs from m * sum(dequantized activations) by that much.
        tol += std::ldexp(1.0, -11) * MinTermMagnitude(t, w, ad);
      }
      const float got = VecDot(t, n, w.data(), a.data());
      const float got_ref = ref::VecDot(t, n, w.data(), a.data());
      EXPECT_NEAR(got_ref, e.dot, tol) << TypeName(t) << " n=" << n << " (scalar)";
      EXPECT_NEAR(got, e.dot, tol) << TypeName(t) << " n=" << n << " (" << ActiveIsa() << ")";
    }
  }
}

// Upper bound of |x - dequant(quant(x))| for element i of an activation row.
double ActivationErrorBound(GgmlType act, const std::vector<float>& x, size_t i) {
  switch (act) {
    case GgmlType::F32: return 0.0;
    case GgmlType::F16: return std::fabs(x[i]) * std::ldexp(1.0, -11) + std::ldexp(1.0, -25);
    case GgmlType::BF16: return std::fabs(x[i]) * std::ldexp(1.0, -8);
    default: break;
  }
  // Q8: half a step of d = amax/127 over the block, plus (Q8_0/Q8_1) the fp16 rounding of d
  // applied to |q| <= 127: 127 * d * 2^-11 = 0.062 d.
  const size_t bs = act == GgmlType::Q8_K ? kQK_K : kQK;
  const size_t b0 = i / bs * bs;
  double amax = 0.0;
  for (size_t j = b0; j < b0 + bs; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const double d = amax / 127.0;
  return d * (act == GgmlType::Q8_K ? 0.5001 : 0.5625);
}

TEST(QuantDot, CloseToFloatDot) {
  // Against the unquantized activations the only extra error is the activation quantization,
  // bounded element-wise by ActivationErrorBound (so this tolerance is much looser).
  std::mt19937 rng(99);
  for (GgmlType t : kWeightTypes) {
    const GgmlType act = VecDotType(t);
    const int64_t n = 2048;
    const std::vector<uint8_t> w = MakeWeights(t, n, rng, QuantFill::kRandom);
    const std::vector<float> x = RandomFloats(n, rng);
    const std::vector<float> wd = Dequantize(t, w, n);
    const Exact e = ExactDot(wd, x);
    double bound = 0.0;
    for (size_t i = 0; i < x.size(); ++i) bound += std::fabs(wd[i]) * ActivationErrorBound(act, x, i);
    const std::vector<float> ad = Dequantize(act, Quantize(act, x), n);
    double tol = bound + DotTolerance(t, n, e.mag + MinTermMagnitude(t, w, ad)) * 2;
    if (act == GgmlType::Q8_1) tol += std::ldexp(1.0, -11) * MinTermMagnitude(t, w, ad);
    const float got = VecDot(t, n, w.data(), Quantize(act, x).data());
    EXPECT_NEAR(got, e.dot, tol) << TypeName(t);
    // The bound is meaningful only if it is small relative to the dot's scale.
    EXPECT_LT(bound, 0.05 * e.mag) << TypeName(t);
  }
}

TEST(QuantVectors, E8M0TableIsTheBitConstruction) {
  for (int e = 0; e < 256; ++e) EXPECT_TRUE(SameFloat(kE8M0Half.v[e], E8M0ToFp32Half(uint8_t(e)))) << e;
  EXPECT_EQ(kE8M0Half.v[128], 1.0f);
  EXPECT_EQ(kE8M0Half.v[0], std::ldexp(1.0f, -128));
}

TEST(QuantDot, SupportAndVecDotTypes) {
  EXPECT_EQ(VecDotType(GgmlType::Q4_0), GgmlType::Q8_0);
  EXPECT_EQ(VecDotType(GgmlType::Q5_0), GgmlType::Q8_0);
  EXPECT_EQ(VecDotType(GgmlType::Q8_0), GgmlType::Q8_0);
  EXPECT_EQ(VecDotType(GgmlType::Q4_1), GgmlType::Q8_1);
  EXPECT_EQ(VecDotType(GgmlType::Q5_1), GgmlType::Q8_1);
  for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    EXPECT_EQ(VecDotType(t), GgmlType::Q8_K);
  }
  EXPECT_EQ(VecDotType(GgmlType::F16), GgmlType::F16);
  EXPECT_EQ(VecDotType(GgmlType::BF16), GgmlType::BF16);
  EXPECT_EQ(VecDotType(GgmlType::F32), GgmlType::F32);
  for (GgmlType t : kWeightTypes) {
    EXPECT_TRUE(IsSupported(t)) << TypeName(t);
    EXPECT_NE(GetVecDotFn(t), nullptr) << TypeName(t);
  }
  EXPECT_EQ(VecDotType(GgmlType::IQ4_NL), GgmlType::Q8_0);
  EXPECT_EQ(VecDotType(GgmlType::MXFP4), GgmlType::Q8_0);
  EXPECT_EQ(VecDotType(GgmlType::IQ4_XS), GgmlType::Q8_K);
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::Q8_K, GgmlType::I32}) {
    EXPECT_FALSE(IsSupported(t)) << TypeName(t);
    EXPECT_EQ(GetVecDotFn(t), nullptr) << TypeName(t);
  }
  EXPECT_EQ(GetVecDotFn(static_cast<GgmlType>(1000)), nullptr);
}

// ---------------------------------------------------------------- SIMD vs scalar reference

// A CPU whose dispatched kernels are not all the scalar reference: x86 with AVX2 + FMA + F16C,
// or any aarch64 CPU unless ZF_NO_NEON is set (NEON float dot products and packed kernels).
bool HaveSimd() {
#if defined(__aarch64__)
  return std::getenv("ZF_NO_NEON") == nullptr;
#else
  return CpuHasAvx2Fma16();
#endif
}

#if defined(__aarch64__)
// The NEON codebook, Q4_0 and Q8_0 dot products (codebook_asimd.cpp, dot_q8_*.cpp) keep the
// reference's float steps: the dispatched ones, and for Q4_0 / Q8_0 both builds called directly
// (baseline NEON and, where the CPU has it, the dot product), on block counts with every tail of
// the 4-block steps, -128 weights and extreme scales (zero, subnormal, the largest half); and
// aarch64's GemmQ8_0 (dispatched and both builds) gives each (row, token) the one-token bits.
TEST(QuantSimd, NeonDotsAreBitIdenticalToReference) {
  if (!HaveSimd()) GTEST_SKIP() << "ZF_NO_NEON";
  std::mt19937 rng(77);
  for (GgmlType t : {GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4}) {
    const int64_t n = 2048;
    const std::vector<uint8_t> w = MakeWeights(t, n, rng, QuantFill::kRandom);
    const std::vector<uint8_t> a = Quantize(VecDotType(t), RandomFloats(n, rng));
    EXPECT_TRUE(SameFloat(VecDot(t, n, w.data(), a.data()), ref::VecDot(t, n, w.data(), a.data()))) << TypeName(t);
  }
  struct Kernel {
    GgmlType t;
    VecDotFn fn;
    const char* name;
  };
  std::vector<Kernel> kernels = {{GgmlType::Q4_0, GetVecDotFn(GgmlType::Q4_0), "dispatched"},
                                 {GgmlType::Q8_0, GetVecDotFn(GgmlType::Q8_0), "dispatched"},
                                 {GgmlType::Q4_0, asimd::VecDotQ4_0, "asimd"},
                                 {GgmlType::Q8_0, asimd::VecDotQ8_0, "asimd"}};
  if (CpuHasNeonDotprod()) {
    kernels.push_back({GgmlType::Q4_0, neon::VecDotQ4_0, "neon"});
    kernels.push_back({GgmlType::Q8_0, neon::VecDotQ8_0, "neon"});
  }
  const float scales[] = {0.0f, Fp16ToFp32(0x0001), 1e-3f, 65504.0f};
  for (const Kernel& k : kernels) {
    EXPECT_NE(k.fn, ref::GetVecDotFn(k.t)) << TypeName(k.t) << " " << k.name;
    for (int64_t nb : {1, 2, 3, 4, 5, 7, 8, 18, 64, 600}) {
      const int64_t n = nb * 32;
      for (QuantFill fill : {QuantFill::kRandom, QuantFill::kQ8Min, QuantFill::kAllOnes}) {
        std::vector<std::vector<uint8_t>> rows = {MakeWeights(k.t, n, rng, fill)};
        for (float d : scales) rows.push_back(MakeWeights(k.t, n, rng, fill, true, d));
        const std::vector<uint8_t> a = Quantize(GgmlType::Q8_0, RandomFloats(n, rng));
        for (const std::vector<uint8_t>& w : rows) {
          ASSERT_TRUE(SameFloat(k.fn(n, w.data(), a.data()), ref::GetVecDotFn(k.t)(n, w.data(), a.data())))
              << TypeName(k.t) << " " << k.name << " n=" << n << " fill=" << static_cast<int>(fill);
        }
      }
    }
  }
  using Gemm = void (*)(int64_t, const void*, size_t, int64_t, const void*, size_t, int64_t, float*, int64_t);
  std::vector<std::pair<Gemm, const char*>> gemms = {{GemmQ8_0, "dispatched"}, {asimd::GemmQ8_0, "asimd"}};
  if (CpuHasNeonDotprod()) gemms.push_back({neon::GemmQ8_0, "neon"});
  struct GemmShape {
    int64_t rows, n_tok, k;
  };
  // Tile tails (2 rows x 4 tokens), and rows beyond the staging (513 blocks: VecDot only).
  for (const GemmShape& g : {GemmShape{5, 9, 640}, GemmShape{2, 4, 32}, GemmShape{3, 5, 96}, GemmShape{1, 3, 64},
                             GemmShape{4, 8, 32 * 513}}) {
    const size_t row = RowSize(GgmlType::Q8_0, g.k);
    std::vector<uint8_t> w, a;
    for (int64_t r = 0; r < g.rows; ++r) {
      const std::vector<uint8_t> b = MakeWeights(GgmlType::Q8_0, g.k, rng, r == 1 ? QuantFill::kQ8Min : QuantFill::kRandom);
      w.insert(w.end(), b.begin(), b.end());
    }
    for (int64_t i = 0; i < g.n_tok; ++i) {
      const std::vector<uint8_t> b = Quantize(GgmlType::Q8_0, RandomFloats(g.k, rng));
      a.insert(a.end(), b.begin(), b.end());
    }
    for (const auto& [gemm, name] : gemms) {
      std::vector<float> y(size_t(g.rows * g.n_tok));
      gemm(g.k, w.data(), row, g.rows, a.data(), row, g.n_tok, y.data(), g.rows);
      for (int64_t t = 0; t < g.n_tok; ++t) {
        for (int64_t r = 0; r < g.rows; ++r) {
          const float want = ref::VecDotQ8_0(g.k, w.data() + row * size_t(r), a.data() + row * size_t(t));
          ASSERT_TRUE(SameFloat(y[size_t(t * g.rows + r)], want))
              << "GemmQ8_0 " << name << " k " << g.k << " at (" << r << ", " << t << ")";
        }
      }
    }
  }
}
#endif

TEST(QuantSimd, DispatchPicksAvx2WhenAvailable) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
  // AVX-512 VNNI CPUs get the wider kernels unless ZF_NO_AVX512 is set.
  const bool avx512 = CpuHasAvx512Vnni() && std::getenv("ZF_NO_AVX512") == nullptr;
  EXPECT_STREQ(ActiveIsa(), avx512 ? "avx512-vnni" : "avx2");
  EXPECT_NE(GetVecDotFn(GgmlType::Q4_K), ref::GetVecDotFn(GgmlType::Q4_K));
}

void CheckSimdDot(GgmlType t, int64_t n, const std::vector<uint8_t>& w, const std::vector<float>& x,
                  const std::string& what) {
  const GgmlType act = VecDotType(t);
  std::vector<uint8_t> a(RowSize(act, n));
  ref::QuantizeActivations(act, x.data(), a.data(), n);
  const std::vector<float> wd = Dequantize(t, w, n);
  const std::vector<float> ad = Dequantize(act, a, n);
  const Exact e = ExactDot(wd, ad);
  const double tol = 2.0 * DotTolerance(t, n, e.mag + MinTermMagnitude(t, w, ad));
  const float want = ref::VecDot(t, n, w.data(), a.data());
  const float got = VecDot(t, n, w.data(), a.data());
  if (!std::isfinite(want) || !std::isfinite(got)) {
    EXPECT_TRUE(SameFloat(got, want)) << TypeName(t) << " n=" << n << " " << what;
    return;
  }
  EXPECT_NEAR(got, want, tol) << TypeName(t) << " n=" << n << " " << what;
}

std::vector<int64_t> SimdLengths(GgmlType t) {
  const int64_t bs = BlockSize(t) == 1 ? 32 : BlockSize(t);
  std::vector<int64_t> lens = {bs, 3 * bs, 7 * bs};
  if (BlockSize(t) == 1) lens.insert(lens.end(), {1, 7, 33, 1001});  // float rows: tails
  for (int64_t n : {576, 640, 1024, 1536, 2048}) {
    if (n % BlockSize(t) == 0) lens.push_back(n);
  }
  return lens;
}

TEST(QuantSimd, VecDotMatchesReferenceOnRandomRows) {
  if (!HaveSimd()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  std::mt19937 rng(42);
  for (GgmlType t : kWeightTypes) {
    for (int64_t n : SimdLengths(t)) {
      for (int rep = 0; rep < 3; ++rep) {
        CheckSimdDot(t, n, MakeWeights(t, n, rng, QuantFill::kRandom), RandomFloats(n, rng), "random");
      }
    }
  }
}

TEST(QuantSimd, VecDotMatchesReferenceOnEdgeCases) {
  if (!HaveSimd()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  std::mt19937 rng(43);
  // fp16 scale extremes: zero, the smallest subnormal, tiny, 1, the largest finite, negative.
  const float scales[] = {0.0f, Fp16ToFp32(0x0001), 1e-6f, 1.0f, 65504.0f, -2.5f};
  const QuantFill fills[] = {QuantFill::kRandom, QuantFill::kAllOnes, QuantFill::kAllZero, QuantFill::kQ8Min};
  for (GgmlType t : kWeightTypes) {
    for (int64_t n : {BlockSize(t) == 1 ? int64_t{64} : BlockSize(t), 7 * (BlockSize(t) == 1 ? 32 : BlockSize(t))}) {
      std::vector<std::vector<float>> acts;
      acts.push_back(RandomFloats(n, rng));
      acts.push_back(std::vector<float>(n, 0.0f));           // all-zero activations (d = 0)
      std::vector<float> spike = RandomFloats(n, rng, 1e-3f);  // one huge value per row
      spike[n / 2] = 1e4f;
      acts.push_back(spike);
      std::vector<float> same(n, -3.0f);  // every element ties for the maximum magnitude
      for (int64_t i = 0; i < n; i += 2) same[i] = 3.0f;
      acts.push_back(same);
      for (float d : scales) {
        for (QuantFill fill : fills) {
          const std::vector<uint8_t> w = MakeWeights(t, n, rng, fill, true, d);
          for (size_t k = 0; k < acts.size(); ++k) {
            CheckSimdDot(t, n, w, acts[k], "d=" + std::to_string(d) + " fill=" +
                                               std::to_string(static_cast<int>(fill)) + " act=" +
                                               std::to_string(k));
          }
        }
      }
    }
  }
}

TEST(QuantSimd, ActivationQuantizersAreBitExact) {
  // The x86 quantizers and F16 conversions; aarch64 has no SIMD quantizers (they would compare
  // the reference with itself) and converts halves in hardware (QuantFp16.* cover that).
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "no SIMD activation quantizers on this CPU";
  std::mt19937 rng(44);
  std::vector<std::vector<float>> inputs;
  for (int64_t n : {256, 768, 2048}) inputs.push_back(RandomFloats(n, rng, 3.0f));
  // Exact .5 ties after scaling: amax 127 gives d = 1 (Q8_0: roundf away from zero) and
  // max -127 gives iscale = 1 (Q8_K: nearest even).
  std::vector<float> ties(512);
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(static_cast<int>(i % 64) - 32) + 0.5f;
  for (size_t i = 0; i < ties.size(); i += 32) ties[i] = (i % 256 == 0) ? -127.0f : 127.0f;
  inputs.push_back(ties);
  std::vector<float> mixed = RandomFloats(512, rng);
  mixed[3] = 0.0f;
  mixed[100] = -1e-30f;
  mixed[200] = 1e30f;
  for (int i = 256; i < 288; ++i) mixed[i] = 0.0f;  // a zero Q8_0 block
  inputs.push_back(mixed);
  inputs.push_back(std::vector<float>(256, 0.0f));  // a zero Q8_K block
  for (const auto& x : inputs) {
    const int64_t n = static_cast<int64_t>(x.size());
    for (GgmlType act : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::F16, GgmlType::BF16}) {
      if (n % BlockSize(act) != 0) continue;
      std::vector<uint8_t> got(RowSize(act, n)), want(RowSize(act, n));
      QuantizeActivations(act, x.data(), got.data(), n);
      ref::QuantizeActivations(act, x.data(), want.data(), n);
      EXPECT_EQ(got, want) << TypeName(act) << " n=" << n;
    }
  }
  // F16 rows with tails and special values.
  std::vector<float> f = RandomFloats(1003, rng, 1000.0f);
  f[0] = 65520.0f;
  f[1] = std::nanf("");
  f[2] = -INFINITY;
  f[3] = 1e-7f;
#if defined(__x86_64__) || defined(__i386__)
  std::vector<uint16_t> got(f.size()), want(f.size());
  avx2::QuantizeF16(f.data(), got.data(), static_cast<int64_t>(f.size()));
  Fp32ToFp16Row(f.data(), want.data(), static_cast<int64_t>(f.size()));
  EXPECT_EQ(got, want);
#endif
  // And back: every half (with a tail), SIMD vs scalar conversion.
  std::vector<uint16_t> all(65536 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  std::vector<float> back(all.size()), back_ref(all.size());
  DequantizeRow(GgmlType::F16, all.data(), back.data(), static_cast<int64_t>(all.size()));
  Fp16ToFp32Row(all.data(), back_ref.data(), static_cast<int64_t>(all.size()));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_TRUE(SameFloat(back[i], back_ref[i])) << all[i];
}

// ---------------------------------------------------------------- fp16 / bf16

TEST(QuantFp16, KnownValues) {
  EXPECT_EQ(Fp32ToFp16(1.0f), 0x3C00);
  EXPECT_EQ(Fp32ToFp16(-2.0f), 0xC000);
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(0.0f), 0x0000);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(Fp32ToFp16(INFINITY), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(-INFINITY), 0xFC00);
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1023.0f, -24)), 0x03FF);
  // Ties round to even.
  EXPECT_EQ(Fp32ToFp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(Fp32ToFp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -25)), 0x0000);      // half of the smallest subnormal
  EXPECT_EQ(Fp32ToFp16(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 subnormal steps -> 2
  EXPECT_EQ(Fp32ToFp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // carry to normal
  // Overflow: 65520 is the tie between 65504 and 65536 and rounds (to even) to infinity.
  EXPECT_EQ(Fp32ToFp16(65519.996f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(1e10f), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(1e-30f), 0x0000);
  const uint16_t nan = Fp32ToFp16(std::nanf(""));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7E00)));
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7C01)));
  EXPECT_EQ(Fp16ToFp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Fp16ToFp32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(Fp16ToFp32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(Fp16ToFp32(0x7C00), INFINITY);
  EXPECT_EQ(Bits(Fp16ToFp32(0x8000)), 0x80000000u);
  EXPECT_EQ(Fp16ToFp32(0x3555), 0.333251953125f);
}

TEST(QuantFp16, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) << h;
      EXPECT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(f)))) << h;
      continue;
    }
    ASSERT_EQ(Fp32ToFp16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(QuantFp16, MatchesNumpyVectors) {
  const Vectors v = Load("F16.act");  // numpy float32 -> float16 (round to nearest even)
  const uint16_t* want = reinterpret_cast<const uint16_t*>(v.bytes.data());
  for (size_t i = 0; i < v.floats.size(); ++i) {
    EXPECT_EQ(Fp32ToFp16(v.floats[i]), want[i]) << "float " << v.floats[i];
  }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("f16c"))) uint16_t HardwareFp32ToFp16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float HardwareFp16ToFp32(uint16_t h) { return _cvtsh_ss(h); }

TEST(QuantFp16, MatchesF16cHardware) {
  // cpuid leaf 1, ECX bit 29 (clang's __builtin_cpu_supports has no "f16c").
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & (1u << 29)) == 0) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    // Half the samples anywhere, half in the half-precision range (exponents 100..143).
    uint32_t u = any(rng);
    if (i & 1) u = (u & 0x807FFFFFu) | ((100u + (u >> 23) % 44u) << 23);
    const float f = FromBits(u);
    const uint16_t hw = HardwareFp32ToFp16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(f))));
      continue;
    }
    ASSERT_EQ(Fp32ToFp16(f), hw) << "float bits 0x" << std::hex << u;
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_TRUE(SameFloat(Fp16ToFp32(static_cast<uint16_t>(h)), HardwareFp16ToFp32(static_cast<uint16_t>(h))));
  }
}
#endif

TEST(QuantBf16, KnownValuesAndRounding) {
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(Fp32ToBf16(-2.0f), 0xC000);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F808000u)), 0x3F80);  // tie -> even (down)
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F818000u)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(Fp32ToBf16(FromBits(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to infinity
  EXPECT_EQ(Fp32ToBf16(INFINITY), 0x7F80);
  EXPECT_EQ(Fp32ToBf16(-INFINITY), 0xFF80);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x00010000u)), 0x0001);  // subnormals are kept
  EXPECT_EQ(Fp32ToBf16(FromBits(0x00008000u)), 0x0000);  // tie to even at the bottom
  EXPECT_EQ(Fp32ToBf16(-0.0f), 0x8000);
  const uint16_t nan = Fp32ToBf16(FromBits(0x7F800001u));  // signalling NaN stays NaN (quiet)
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x0040, 0);
  EXPECT_EQ(Bf16ToFp32(0x3F80), 1.0f);
  EXPECT_EQ(Bits(Bf16ToFp32(0x8001)), 0x80010000u);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(Fp32ToBf16(f), h) << h;
  }
}

TEST(QuantBf16, MatchesGgufPyVectors) {
  const Vectors v = Load("BF16.act");
  const uint16_t* want = reinterpret_cast<const uint16_t*>(v.bytes.data());
  for (size_t i = 0; i < v.floats.size(); ++i) EXPECT_EQ(Fp32ToBf16(v.floats[i]), want[i]) << i;
}

// ---------------------------------------------------------------- speed (run by hand)
// ./zerfoo_unit_tests --gtest_also_run_disabled_tests --gtest_filter='*QuantSpeed*'

TEST(DISABLED_QuantSpeed, VecDot2048) {
  std::mt19937 rng(1);
  const int64_t n = 2048;
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_1,
                     GgmlType::Q5_K, GgmlType::Q4_0, GgmlType::F16, GgmlType::F32}) {
    const std::vector<uint8_t> w = MakeWeights(t, n, rng, QuantFill::kRandom);
    const std::vector<uint8_t> a = Quantize(VecDotType(t), RandomFloats(n, rng));
    double ns[2];
    VecDotFn fns[2] = {ref::GetVecDotFn(t), GetVecDotFn(t)};
    for (int k = 0; k < 2; ++k) {
      volatile float sink = 0.0f;
      const int iters = k == 0 ? 2000 : 20000;
      double best = 1e30;
      for (int rep = 0; rep < 15; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) sink = sink + fns[k](n, w.data(), a.data());
        const auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
      }
      ns[k] = best;
    }
    std::printf("%-5s n=%lld  scalar %8.1f ns  %s %7.1f ns  (x%.1f)\n", TypeName(t),
                static_cast<long long>(n), ns[0], ActiveIsa(), ns[1], ns[0] / ns[1]);
  }
}

}  // namespace
}  // namespace zf::quant
