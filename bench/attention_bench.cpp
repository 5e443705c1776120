// The vision encoder's attention kernels at SigLIP-so400m's shape (16 heads of 72, 4096 patches:
// Gemma 3's 896 px image), Q x K^T over K^T (f16::GemmT), the softmax, P x V, as
// VisionEncoder::Attention runs them: before, the AVX2 softmax row normalized in place and the
// tasks split in fixed halves (ParallelFor); now, the softmax's numerators (AVX-512 where the
// kernels use it), each output row divided by its sum after P x V, and the tasks taken by
// whichever thread is free (ParallelForEach). Old and new alternate, best of N.
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
  std::vector<uint16_t> kt16, vt16;  // [h][d][T], [h][d][T]
};

Inputs Make() {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Inputs in;
  in.q.resize(size_t(kTok * kN));
  for (auto& x : in.q) x = nd(rng);
  in.kt16.resize(size_t(kTok * kN));
  in.vt16.resize(size_t(kTok * kN));
  for (auto& x : in.kt16) x = zf::quant::Fp32ToFp16(nd(rng));
  for (auto& x : in.vt16) x = zf::quant::Fp32ToFp16(nd(rng));
  return in;
}

// One attention (all heads), the tasks as before (`before`) or now; seconds.
double Run(zf::engine::ThreadPool& pool, const Inputs& in, bool before, std::vector<float>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t n_blocks = kTok / kBlock;
  std::vector<std::vector<float>> scratch(size_t(pool.size()), std::vector<float>(size_t(kBlock * kTok)));
  auto task = [&](int64_t w, std::vector<float>& s) {
    const int64_t h = w / n_blocks, q0 = (w % n_blocks) * kBlock;
    const float* q = in.q.data() + q0 * kN + h * kDim;
    float* o = out.data() + q0 * kN + h * kDim;
    zf::quant::f16::GemmT(kDim, in.kt16.data() + h * kDim * kTok, kTok, kTok, q, kN, kBlock, s.data(), kTok);
    float inv[kBlock];
    for (int64_t i = 0; i < kBlock; ++i) {
      if (before) {
        zf::vision::avx2::SoftmaxRow(s.data() + i * kTok, kTok, 0.117851f);
      } else {
        inv[i] = float(1.0 / zf::vision::SoftmaxNumerators(s.data() + i * kTok, kTok, 0.117851f));
      }
    }
    zf::quant::f16::Gemm(kTok, in.vt16.data() + h * kDim * kTok, kTok, kDim, s.data(), kTok, kBlock, o, kN);
    if (!before)
      for (int64_t i = 0; i < kBlock; ++i)
        for (int64_t j = 0; j < kDim; ++j) o[i * kN + j] *= inv[i];
  };
  if (before) {
    pool.ParallelFor(kHeads * n_blocks, [&](int64_t b, int64_t e) {
      std::vector<float> s(size_t(kBlock * kTok));
      for (int64_t w = b; w < e; ++w) task(w, s);
    });
  } else {
    pool.ParallelForEach(kHeads * n_blocks, [&](int64_t w, int32_t ith) { task(w, scratch[size_t(ith)]); });
  }
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
    best_old = std::min(best_old, Run(pool, in, true, out_old));
    best_new = std::min(best_new, Run(pool, in, false, out_new));
  }
  double max_diff = 0;
  for (size_t i = 0; i < out_old.size(); ++i) max_diff = std::max(max_diff, double(std::abs(out_old[i] - out_new[i])));
  std::printf("attention 16 x 72, %lld patches, %d thread(s), best of %d: before %.1f ms, now %.1f ms (%.2fx); "
              "max |diff| %.2g\n",
              static_cast<long long>(kTok), threads, repeats, best_old * 1e3, best_new * 1e3, best_old / best_new, max_diff);
  return 0;
}
