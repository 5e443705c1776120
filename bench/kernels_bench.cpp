// Kernel micro-benchmarks: quantized dot products per type, GEMV/GEMM shapes of the two real
// models through the CPU engine, attention at several KV lengths, RMSNorm, RoPE, and sampling
// over a 262k vocabulary. Random data; weights quantized with the library's own quantizers.
//   cmake -DZF_BUILD_BENCH=ON ... && build/bench/zerfoo_kernel_bench
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/packed_weights.h"
#include "quant/packed.h"
#include "quant/quant.h"
#include "runtime/sampler.h"

namespace {

using zf::GgmlType;

std::vector<float> Random(size_t n, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Anonymous memory asking for transparent huge pages, freed at scope end.
class HugeBuffer {
 public:
  explicit HugeBuffer(size_t n) : size_((n + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1)) {
    void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p_ = m == MAP_FAILED ? nullptr : static_cast<uint8_t*>(m);
#ifdef MADV_HUGEPAGE
    if (p_ != nullptr) madvise(p_, size_, MADV_HUGEPAGE);
#endif
  }
  ~HugeBuffer() {
    if (p_ != nullptr) munmap(p_, size_);
  }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  uint8_t* data() const { return p_; }

 private:
  size_t size_;
  uint8_t* p_;
};

// Weights of a type without a quantizer in the library's activation path are filled with
// random bytes whose block scales are sane (F16 1.0) - enough for timing.
std::vector<uint8_t> RandomWeights(GgmlType t, int64_t rows, int64_t cols) {
  const size_t row = zf::RowSize(t, cols);
  std::vector<uint8_t> w(row * size_t(rows));
  std::mt19937 rng(3);
  for (auto& b : w) b = uint8_t(rng());
  const auto* tr = zf::GetTypeTraits(t);
  if (t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16) {
    // Keep every 16-bit word that may be a scale finite: clear exponent bits' top.
    for (size_t i = 1; i < w.size(); i += 2) w[i] &= 0x3B;
  }
  if (t == GgmlType::MXFP4) {  // E8M0 exponents as in real files (2^-8..2^-1), not random bytes:
                               // those give infinite and subnormal scales, slow on every path
    for (size_t i = 0; i < w.size(); i += 17 /* a BlockMXFP4 */) w[i] = uint8_t(120 + rng() % 8);
  }
  (void)tr;
  return w;
}

void BM_VecDot(benchmark::State& state, GgmlType t) {
  const int64_t n = state.range(0);
  std::vector<uint8_t> w = RandomWeights(t, 1, n);
  const GgmlType at = zf::quant::VecDotType(t);
  std::vector<uint8_t> a(zf::RowSize(at, n));
  std::vector<float> x = Random(size_t(n));
  zf::quant::QuantizeActivations(at, x.data(), a.data(), n);
  for (auto _ : state) benchmark::DoNotOptimize(zf::quant::VecDot(t, n, w.data(), a.data()));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
}

#define ZF_VECDOT(T) BENCHMARK_CAPTURE(BM_VecDot, T, GgmlType::T)->Arg(2048)
ZF_VECDOT(F16);
ZF_VECDOT(Q8_0);
ZF_VECDOT(Q4_0);
ZF_VECDOT(Q4_1);
ZF_VECDOT(Q5_0);
ZF_VECDOT(Q5_1);
ZF_VECDOT(Q2_K);
ZF_VECDOT(Q3_K);
ZF_VECDOT(Q4_K);
ZF_VECDOT(Q5_K);
ZF_VECDOT(Q6_K);
ZF_VECDOT(IQ4_NL);
ZF_VECDOT(IQ4_XS);
ZF_VECDOT(MXFP4);

// A rows x cols matrix of type t over the bytes w, as the engine's MatMul takes it.
zf::engine::Tensor MatrixTensor(GgmlType t, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
  zf::engine::Tensor ti;
  ti.type = t;
  ti.n_dims = 2;
  ti.ne[0] = cols;
  ti.ne[1] = rows;
  ti.data = w.data();
  ti.nbytes = w.size();
  return ti;
}

// y = W x for n_tok tokens: args {rows (out), cols (in), n_tok, threads}.
void BM_MatMul(benchmark::State& state, GgmlType t) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int32_t n_tok = int32_t(state.range(2));
  zf::engine::CpuBackend be(int32_t(state.range(3)));
  std::vector<uint8_t> w = RandomWeights(t, rows, cols);
  const zf::engine::Tensor ti = MatrixTensor(t, w, rows, cols);
  std::vector<float> x = Random(size_t(cols) * size_t(n_tok)), y(size_t(rows) * size_t(n_tok));
  for (auto _ : state) {
    be.MatMul(ti, x.data(), n_tok, y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
}

// SmolLM2 (Q4_1, 576 -> 1536 FFN) and Gemma 3 (Q4_K 640 -> 2048; Q8_0 output 640 -> 262144).
BENCHMARK_CAPTURE(BM_MatMul, smollm2_ffn_up_Q4_1, GgmlType::Q4_1)
    ->Args({1536, 576, 1, 1})->Args({1536, 576, 1, 2})->Args({1536, 576, 64, 2});
BENCHMARK_CAPTURE(BM_MatMul, gemma3_ffn_up_Q4_K, GgmlType::Q4_K)
    ->Args({2048, 640, 1, 1})->Args({2048, 640, 1, 2})->Args({2048, 640, 64, 2});
BENCHMARK_CAPTURE(BM_MatMul, gemma3_output_Q8_0, GgmlType::Q8_0)
    ->Args({262144, 640, 1, 1})->Args({262144, 640, 1, 2})->Unit(benchmark::kMillisecond);
// Prefill (pp512) shapes, one thread: Gemma 3 ffn_up (Q5_0), ffn_down (Q4_K, Q6_K); SmolLM2
// ffn_up (Q4_1).
BENCHMARK_CAPTURE(BM_MatMul, pp512_gemma3_ffn_up_Q5_0, GgmlType::Q5_0)->Args({2048, 640, 512, 1})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatMul, pp512_gemma3_ffn_down_Q4_K, GgmlType::Q4_K)->Args({640, 2048, 512, 1})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatMul, pp512_gemma3_ffn_down_Q6_K, GgmlType::Q6_K)->Args({640, 2048, 512, 1})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatMul, pp512_smollm2_ffn_up_Q4_1, GgmlType::Q4_1)->Args({1536, 576, 512, 1})->Unit(benchmark::kMillisecond);

// Decode GEMV of the 4-bit codebook types on the row-at-a-time path (a bare tensor: no packed
// copy) beside Q4_0 on the same path, on a matrix far larger than the caches (4096 -> 16384,
// 36 MB as Q4_0): bytes_per_second against the machine's read bandwidth. BM_GemvPacked/dram_*
// are the packed paths on the same shape, one thread; BM_MatMulPacked/dram_IQ4_XS the packed
// path through the engine on 1 and 2 threads.
BENCHMARK_CAPTURE(BM_MatMul, dram_Q4_0, GgmlType::Q4_0)->Args({16384, 4096, 1, 1})->Args({16384, 4096, 1, 2})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatMul, dram_IQ4_NL, GgmlType::IQ4_NL)->Args({16384, 4096, 1, 1})->Args({16384, 4096, 1, 2})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatMul, dram_MXFP4, GgmlType::MXFP4)->Args({16384, 4096, 1, 1})->Args({16384, 4096, 1, 2})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatMul, dram_IQ4_XS, GgmlType::IQ4_XS)->Args({16384, 4096, 1, 1})->Args({16384, 4096, 1, 2})->Unit(benchmark::kMillisecond);

// BM_MatMul's product with the engine's packed decode copy (engine/cpu/packed_weights.h), as a
// loaded model has it: the same args, the same bytes counted (the file's), so its
// bytes_per_second compares with BM_MatMul's row path on the same shape and threads.
void BM_MatMulPacked(benchmark::State& state, GgmlType t) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int32_t n_tok = int32_t(state.range(2)), threads = int32_t(state.range(3));
  if (!zf::quant::PackedGemvAvailable(t)) {
    state.SkipWithError("no packed kernel on this CPU");
    return;
  }
  std::vector<uint8_t> w = RandomWeights(t, rows, cols);
  const zf::engine::Tensor ti = MatrixTensor(t, w, rows, cols);
  std::unique_ptr<zf::engine::PackedWeights> packed;
  if (!zf::engine::PackedWeights::Build({&ti}, threads, &packed).ok() || packed == nullptr) {
    state.SkipWithError("no packed copy built");
    return;
  }
  zf::engine::CpuBackend be(threads, packed.get());
  std::vector<float> x = Random(size_t(cols) * size_t(n_tok)), y(size_t(rows) * size_t(n_tok));
  for (auto _ : state) {
    be.MatMul(ti, x.data(), n_tok, y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
}
BENCHMARK_CAPTURE(BM_MatMulPacked, dram_IQ4_XS, GgmlType::IQ4_XS)->Args({16384, 4096, 1, 1})->Args({16384, 4096, 1, 2})->Unit(benchmark::kMillisecond);

// The packed decode GEMV (quant/packed.h), one thread: args {rows (out), cols (in)}. Bytes are
// the file's bytes of the matrix, so bytes_per_second compares with the memory bandwidth.
void BM_GemvPacked(benchmark::State& state, GgmlType t) {
  const int64_t rows = state.range(0), cols = state.range(1);
  if (!zf::quant::PackedGemvAvailable(t)) {
    state.SkipWithError("no packed kernel on this CPU");
    return;
  }
  const std::vector<uint8_t> w = RandomWeights(t, rows, cols);
  const size_t row = zf::RowSize(t, cols), gbytes = zf::quant::PackedGroupBytes(t, cols);
  const int64_t groups = zf::quant::PackedGroups(rows);
  // Huge-page memory, as the engine's packed arena (engine/cpu/packed_weights.cpp) asks for.
  HugeBuffer buf(size_t(groups) * gbytes);
  uint8_t* p = buf.data();
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t n = std::min<int64_t>(zf::quant::kPackRows, rows - g * zf::quant::kPackRows);
    zf::quant::PackDecodeGroup(t, w.data() + size_t(g * zf::quant::kPackRows) * row, row, cols, n, p + size_t(g) * gbytes);
  }
  const GgmlType at = zf::quant::VecDotType(t);
  std::vector<uint8_t> a(zf::RowSize(at, cols));
  std::vector<float> x = Random(size_t(cols)), y(size_t(groups * zf::quant::kPackRows));
  zf::quant::QuantizeActivations(at, x.data(), a.data(), cols);
  for (auto _ : state) {
    zf::quant::GemvPacked(t, cols, p, 0, groups, rows, a.data(), y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
}
BENCHMARK_CAPTURE(BM_GemvPacked, gemma3_output_Q8_0, GgmlType::Q8_0)->Args({262144, 640})->Unit(benchmark::kMillisecond);
// 11 MB: stays in L3, so this is the kernel's compute ceiling (the one above is DRAM-bound).
BENCHMARK_CAPTURE(BM_GemvPacked, cached_Q8_0, GgmlType::Q8_0)->Args({16384, 640});
BENCHMARK_CAPTURE(BM_GemvPacked, smollm2_ffn_up_Q4_1, GgmlType::Q4_1)->Args({1536, 576});
// ~90 KB: in L2, the kernels' compute ceiling without L3 in the way.
BENCHMARK_CAPTURE(BM_GemvPacked, l2_Q4_1, GgmlType::Q4_1)->Args({256, 576});
BENCHMARK_CAPTURE(BM_GemvPacked, l2_Q8_0, GgmlType::Q8_0)->Args({256, 640});
BENCHMARK_CAPTURE(BM_GemvPacked, gemma3_ffn_up_Q5_0, GgmlType::Q5_0)->Args({2048, 640});
BENCHMARK_CAPTURE(BM_GemvPacked, gemma3_ffn_down_Q4_K, GgmlType::Q4_K)->Args({640, 2048});
BENCHMARK_CAPTURE(BM_GemvPacked, gemma3_ffn_down_Q6_K, GgmlType::Q6_K)->Args({640, 2048});
BENCHMARK_CAPTURE(BM_GemvPacked, big_Q4_K, GgmlType::Q4_K)->Args({16384, 2048})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, big_Q6_K, GgmlType::Q6_K)->Args({16384, 2048})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, big_Q4_1, GgmlType::Q4_1)->Args({65536, 640})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, big_Q5_0, GgmlType::Q5_0)->Args({65536, 640})->Unit(benchmark::kMillisecond);
// 80-120 MB, well past any L3 here: decode's case, streaming from DRAM (compare with the
// machine's read bandwidth, bench/membw.c). Q8_0, Q4_K and Q6_K at that size: the one-token
// rows of BM_GemvPackedMulti/dram_* (n = 1).
BENCHMARK_CAPTURE(BM_GemvPacked, dram_Q4_1, GgmlType::Q4_1)->Args({196608, 640})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, dram_Q5_0, GgmlType::Q5_0)->Args({196608, 640})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, dram_Q4_0, GgmlType::Q4_0)->Args({16384, 4096})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, dram_IQ4_NL, GgmlType::IQ4_NL)->Args({16384, 4096})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, dram_MXFP4, GgmlType::MXFP4)->Args({16384, 4096})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemvPacked, dram_IQ4_XS, GgmlType::IQ4_XS)->Args({16384, 4096})->Unit(benchmark::kMillisecond);

// Batched decode (quant/packed.h GemvPackedMulti), one thread: args {rows (out), cols (in),
// n tokens, batched}. batched = 1: one GemvPackedMulti call for the n tokens; 0: n separate
// GemvPacked calls (what a batch costs without the batched kernel). The counter
// "per_token" is the time per token (compare across n and between the two forms).
void BM_GemvPackedMulti(benchmark::State& state, GgmlType t) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int32_t n = int32_t(state.range(2));
  const bool batched = state.range(3) != 0;
  if (!zf::quant::PackedGemvAvailable(t)) {
    state.SkipWithError("no packed kernel on this CPU");
    return;
  }
  const std::vector<uint8_t> w = RandomWeights(t, rows, cols);
  const size_t row = zf::RowSize(t, cols), gbytes = zf::quant::PackedGroupBytes(t, cols);
  const int64_t groups = zf::quant::PackedGroups(rows);
  HugeBuffer buf(size_t(groups) * gbytes);
  uint8_t* p = buf.data();
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t m = std::min<int64_t>(zf::quant::kPackRows, rows - g * zf::quant::kPackRows);
    zf::quant::PackDecodeGroup(t, w.data() + size_t(g * zf::quant::kPackRows) * row, row, cols, m, p + size_t(g) * gbytes);
  }
  const GgmlType at = zf::quant::VecDotType(t);
  std::vector<std::vector<uint8_t>> acts(size_t(n), std::vector<uint8_t>(zf::RowSize(at, cols)));
  std::vector<std::vector<float>> outs(size_t(n), std::vector<float>(size_t(groups * zf::quant::kPackRows)));
  std::vector<const void*> a;
  std::vector<float*> y;
  for (int32_t i = 0; i < n; ++i) {
    const std::vector<float> x = Random(size_t(cols), uint32_t(i + 1));
    zf::quant::QuantizeActivations(at, x.data(), acts[size_t(i)].data(), cols);
    a.push_back(acts[size_t(i)].data());
    y.push_back(outs[size_t(i)].data());
  }
  for (auto _ : state) {
    if (batched) {
      zf::quant::GemvPackedMulti(t, cols, p, 0, groups, rows, a.data(), y.data(), n);
    } else {
      for (int32_t i = 0; i < n; ++i) zf::quant::GemvPacked(t, cols, p, 0, groups, rows, a[size_t(i)], y[size_t(i)]);
    }
    benchmark::ClobberMemory();
  }
  state.counters["per_token"] =
      benchmark::Counter(double(state.iterations()) * n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
}
void MultiArgs(benchmark::internal::Benchmark* b, int64_t rows, int64_t cols) {
  for (int64_t batched : {0, 1}) {
    for (int64_t n : {1, 2, 4, 8, 16}) b->Args({rows, cols, n, batched});
  }
  b->Unit(benchmark::kMillisecond);
}
// ffn_up of a 1.7B-class model (6144 x 2048: 7 MB in Q4_K, within a Zen 4 L3) and one 8x as
// tall (56 MB in Q4_K, 107 MB in Q8_0: DRAM).
BENCHMARK_CAPTURE(BM_GemvPackedMulti, ffn_up_Q4_K, GgmlType::Q4_K)->Apply([](auto* b) { MultiArgs(b, 6144, 2048); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, ffn_up_Q8_0, GgmlType::Q8_0)->Apply([](auto* b) { MultiArgs(b, 6144, 2048); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, dram_Q4_K, GgmlType::Q4_K)->Apply([](auto* b) { MultiArgs(b, 49152, 2048); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, dram_Q8_0, GgmlType::Q8_0)->Apply([](auto* b) { MultiArgs(b, 49152, 2048); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, dram_Q6_K, GgmlType::Q6_K)->Apply([](auto* b) { MultiArgs(b, 49152, 2048); });
// Exact prefill's products (16 tokens per call, as DecodePacked hands them over) at the real
// models' shapes: per_token against BM_MatMul/pp512_* (the multi-token GEMM) / 512.
void PrefillArgs(benchmark::internal::Benchmark* b, int64_t rows, int64_t cols) {
  b->Args({rows, cols, 16, 1})->Unit(benchmark::kMillisecond);
}
BENCHMARK_CAPTURE(BM_GemvPackedMulti, pp_smollm2_ffn_up_Q4_1, GgmlType::Q4_1)->Apply([](auto* b) { PrefillArgs(b, 1536, 576); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, pp_gemma3_ffn_up_Q5_0, GgmlType::Q5_0)->Apply([](auto* b) { PrefillArgs(b, 2048, 640); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, pp_gemma3_ffn_down_Q4_K, GgmlType::Q4_K)->Apply([](auto* b) { PrefillArgs(b, 640, 2048); });
BENCHMARK_CAPTURE(BM_GemvPackedMulti, pp_gemma3_ffn_down_Q6_K, GgmlType::Q6_K)->Apply([](auto* b) { PrefillArgs(b, 640, 2048); });

// One decode step's attention: args {kv_len, n_head, n_head_kv, head_dim}.
void BM_Attention(benchmark::State& state) {
  const int32_t kv_len = int32_t(state.range(0)), n_head = int32_t(state.range(1));
  const int32_t n_kv = int32_t(state.range(2)), hd = int32_t(state.range(3));
  zf::engine::CpuBackend be(1);
  std::unique_ptr<zf::engine::KvCache> cache;
  if (!be.CreateKv(1, kv_len + 1, n_kv * hd, n_kv * hd, zf::engine::KvType::kF16, &cache).ok()) {
    state.SkipWithError("CreateKv failed");
    return;
  }
  std::vector<float> kv = Random(size_t(kv_len) * size_t(n_kv * hd), 5);
  be.StoreKv(*cache, 0, kv.data(), kv.data(), kv_len, 0);
  std::vector<float> q = Random(size_t(n_head * hd), 6), out(size_t(n_head * hd));
  zf::engine::AttentionParams ap;
  ap.n_head = n_head;
  ap.n_head_kv = n_kv;
  ap.head_dim_k = ap.head_dim_v = hd;
  ap.scale = 0.125f;
  for (auto _ : state) be.Attention(*cache, 0, q.data(), 1, kv_len - 1, ap, out.data());
}
// Prefill attention over a whole prompt: args {n_tok, n_head, n_head_kv, head_dim}, one thread.
void BM_AttentionPrefill(benchmark::State& state) {
  const int32_t n_tok = int32_t(state.range(0)), n_head = int32_t(state.range(1));
  const int32_t n_kv = int32_t(state.range(2)), hd = int32_t(state.range(3));
  zf::engine::CpuBackend be(1);
  std::unique_ptr<zf::engine::KvCache> cache;
  if (!be.CreateKv(1, n_tok, n_kv * hd, n_kv * hd, zf::engine::KvType::kF16, &cache).ok()) {
    state.SkipWithError("CreateKv failed");
    return;
  }
  std::vector<float> kv = Random(size_t(n_tok) * size_t(n_kv * hd), 5);
  be.StoreKv(*cache, 0, kv.data(), kv.data(), n_tok, 0);
  std::vector<float> q = Random(size_t(n_tok) * size_t(n_head * hd), 6), out(size_t(n_tok) * size_t(n_head * hd));
  zf::engine::AttentionParams ap;
  ap.n_head = n_head;
  ap.n_head_kv = n_kv;
  ap.head_dim_k = ap.head_dim_v = hd;
  ap.scale = 0.125f;
  for (auto _ : state) be.Attention(*cache, 0, q.data(), n_tok, 0, ap, out.data());
}
BENCHMARK(BM_AttentionPrefill)->Args({512, 4, 1, 256})->Args({512, 9, 3, 64})->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Attention)->Args({128, 9, 3, 64})->Args({1024, 9, 3, 64})->Args({512, 4, 1, 256})->Args({4096, 4, 1, 256});

void BM_RmsNorm(benchmark::State& state) {
  const int32_t n = int32_t(state.range(0));
  zf::engine::CpuBackend be(1);
  std::vector<float> x = Random(size_t(n)), w = Random(size_t(n), 2);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) be.RmsNorm(x.data(), w.data(), 1, n, 1e-6f, y.data());
}
BENCHMARK(BM_RmsNorm)->Arg(576)->Arg(640);

void BM_Rope(benchmark::State& state) {
  zf::engine::CpuBackend be(1);
  std::vector<float> x = Random(9 * 64);
  int32_t pos = 100;
  zf::engine::RopeParams rp;
  rp.n_rot = 64;
  for (auto _ : state) be.Rope(x.data(), 1, 9, 64, &pos, rp);
}
BENCHMARK(BM_Rope);

// Sampling over Gemma's 262k vocabulary: greedy and the default top-k/top-p/min-p chain.
void BM_Sample(benchmark::State& state) {
  const int32_t n_vocab = 262144;
  std::vector<float> logits = Random(size_t(n_vocab), 9);
  zf::rt::SamplerParams p;
  p.temperature = state.range(0) == 0 ? 0.0f : 0.8f;
  zf::rt::Sampler s(p, n_vocab);
  for (auto _ : state) benchmark::DoNotOptimize(s.Sample(logits.data(), nullptr, 0));
}
BENCHMARK(BM_Sample)->Arg(0)->Arg(1);

}  // namespace
