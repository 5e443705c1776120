// The vision encoder's attention kernels at SigLIP-so400m's shape (16 heads of 72, 4096 patches:
// Gemma 3's 896 px image): Q x K^T on the AVX2 row kernel over K's rows (before: a 72-wide head
// was no multiple of 16 for the AVX-512 one) against f16::GemmT over K^T (now), each followed by
// the softmax and P x V as VisionEncoder::Attention runs them; old and new alternate, best of N.
//   build-test/bench/zerfoo_attention_bench [threads=1] [repeats=5]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "engine/thread_pool.h"
#include "quant/f16_gemm.h"
#include "quant/quant.h"
#include "vision/softmax.h"

namespace {

constexpr int64_t kHeads = 16, kDim = 72, kTok = 4096, kN = kHeads * kDim, kBlock = 32;

struct Inputs {
  std::vector<float> q;
  std::vector<uint16_t> k16, kt16, vt16;  // [h][T][d], [h][d][T], [h][d][T]
};

Inputs Make() {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Inputs in;
  in.q.resize(size_t(kTok * kN));
  for (auto& x : in.q) x = nd(rng);
  in.k16.resize(size_t(kTok * kN));
  in.kt16.resize(size_t(kTok * kN));
  in.vt16.resize(size_t(kTok * kN));
  for (auto& x : in.k16) x = zf::quant::Fp32ToFp16(nd(rng));
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t t = 0; t < kTok; ++t)
      for (int64_t j = 0; j < kDim; ++j) in.kt16[size_t((h * kDim + j) * kTok + t)] = in.k16[size_t((h * kTok + t) * kDim + j)];
  for (auto& x : in.vt16) x = zf::quant::Fp32ToFp16(nd(rng));
  return in;
}

// One attention (all heads), the scores over K^T (`transposed`) or K's rows; seconds.
double Run(zf::engine::ThreadPool& pool, const Inputs& in, bool transposed, std::vector<float>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t n_blocks = kTok / kBlock;
  pool.ParallelFor(kHeads * n_blocks, [&](int64_t b, int64_t e) {
    std::vector<float> s(size_t(kBlock * kTok));
    for (int64_t w = b; w < e; ++w) {
      const int64_t h = w / n_blocks, q0 = (w % n_blocks) * kBlock;
      const float* q = in.q.data() + q0 * kN + h * kDim;
      if (transposed)
        zf::quant::f16::GemmT(kDim, in.kt16.data() + h * kDim * kTok, kTok, kTok, q, kN, kBlock, s.data(), kTok);
      else
        zf::quant::f16::avx2::GemmF16(kDim, in.k16.data() + h * kTok * kDim, kDim, kTok, q, kN, kBlock, s.data(), kTok);
      for (int64_t i = 0; i < kBlock; ++i) zf::vision::avx2::SoftmaxRow(s.data() + i * kTok, kTok, 0.117851f);
      zf::quant::f16::Gemm(kTok, in.vt16.data() + h * kDim * kTok, kTok, kDim, s.data(), kTok, kBlock,
                           out.data() + q0 * kN + h * kDim, kN);
    }
  });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (!zf::quant::f16::Available()) {
    std::printf("no AVX2 + FMA + F16C\n");
    return 0;
  }
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1, repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  zf::engine::ThreadPool pool(std::max(1, threads));
  const Inputs in = Make();
  std::vector<float> out_old(size_t(kTok * kN)), out_new(out_old.size());
  double best_old = 1e9, best_new = 1e9;
  for (int r = 0; r < repeats; ++r) {
    best_old = std::min(best_old, Run(pool, in, false, out_old));
    best_new = std::min(best_new, Run(pool, in, true, out_new));
  }
  double max_diff = 0;
  for (size_t i = 0; i < out_old.size(); ++i) max_diff = std::max(max_diff, double(std::abs(out_old[i] - out_new[i])));
  std::printf("attention 16 x 72, %lld patches, %d thread(s), best of %d: K rows (avx2) %.1f ms, K^T (GemmT) %.1f ms "
              "(%.2fx); max |diff| %.2g\n",
              static_cast<long long>(kTok), threads, repeats, best_old * 1e3, best_new * 1e3, best_old / best_new, max_diff);
  return 0;
}
