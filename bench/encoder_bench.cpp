// The vision encoder alone (VisionEncoder::EncodePixels: patches, blocks, pooling, projection) on
// a projector file, no language model needed: for synthesized encoders in real widths
// (`scripts/synth_mmproj.py OUT --bench LAYERS`) and for two builds side by side, alternating.
// Wall and process CPU time per encode (on a loaded machine the CPU time moves less), best of N,
// and a checksum of the embeddings.
//   zerfoo_encoder_bench MMPROJ.gguf [threads=2] [repeats=3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <vector>

#include "vision/encoder.h"
#include "vision/mmproj.h"

namespace {

double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: zerfoo_encoder_bench MMPROJ.gguf [threads=2] [repeats=3]\n");
    return 2;
  }
  std::unique_ptr<zf::vision::Mmproj> m;
  const zf::Status st = zf::vision::Mmproj::Load(argv[1], &m);
  if (!st.ok()) {
    std::fprintf(stderr, "zerfoo_encoder_bench: %s\n", st.message().c_str());
    return 1;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2, repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  const int64_t S = m->hparams().image_size;
  std::vector<float> px(size_t(S * S * 3));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : px) x = u(rng);
  zf::vision::VisionEncoder enc(*m, threads);
  std::vector<float> out;
  double best_wall = 1e18, best_cpu = 1e18;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuMs();
    const zf::Status e = enc.EncodePixels(px, &out);
    if (!e.ok()) {
      std::fprintf(stderr, "zerfoo_encoder_bench: %s\n", e.message().c_str());
      return 1;
    }
    best_cpu = std::min(best_cpu, CpuMs() - c0);
    best_wall = std::min(best_wall, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  double sum = 0;
  for (float x : out) sum += x;
  std::printf("encode %lld px, %d thread(s), best of %d: wall %.0f ms, cpu %.0f ms; checksum %.6g\n",
              static_cast<long long>(S), threads, repeats, best_wall, best_cpu, sum);
  return 0;
}
