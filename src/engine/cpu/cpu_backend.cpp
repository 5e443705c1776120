// CPU engine ops. Numerics follow the reference engine where it matters for parity:
// activations quantized to the weight's vec-dot type, RMS sums in double, iterative rope
// angles in float, GELU evaluated on F16-rounded inputs (the reference uses an F16 table).
#include "engine/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/attention_kernels.h"
#include "quant/gemm_packed.h"
#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::engine {

CpuBackend::CpuBackend(int32_t n_threads, const PackedWeights* packed)
    : pool_(n_threads), packed_(packed), decode_ranges_(new ChunkRange[size_t(pool_.size())]) {}

Status CpuBackend::InitKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType type) {
  const size_t elem = type == KvType::kF16 ? 2 : 4;
  try {
    k_cache_.assign(size_t(n_layer) * size_t(n_ctx) * size_t(k_width) * elem, 0);
    v_cache_.assign(size_t(n_layer) * size_t(n_ctx) * size_t(v_width) * elem, 0);
    attn_scratch_.assign(size_t(pool_.size()) * AttnScratchPerThread(n_ctx, k_width, v_width), 0.0f);
  } catch (const std::bad_alloc&) {
    return Status(Code::kOutOfMemory, "cannot allocate the KV cache for n_ctx=" + std::to_string(n_ctx));
  }
  n_ctx_ = n_ctx;
  k_width_ = k_width;
  v_width_ = v_width;
  kv_type_ = type;
  return Status::Ok();
}

void CpuBackend::GetRows(const Tensor& table, const int32_t* ids, int32_t n, float scale, float* out) {
  const int64_t width = table.ne[0];
  const size_t row_bytes = RowSize(table.type, width);
  const PackedWeights::Matrix* p = packed_ != nullptr ? packed_->Find(table) : nullptr;
  for (int32_t t = 0; t < n; ++t) {
    float* dst = out + int64_t{t} * width;
    if (p != nullptr) {  // a packed (tied) output projection: its file copy is not resident
      quant::DequantizePackedRow(table.type, p->data, width, ids[t], dst);
    } else {
      quant::DequantizeRow(table.type, table.data + size_t(ids[t]) * row_bytes, dst, width);
    }
    if (scale != 1.0f) {
      for (int64_t i = 0; i < width; ++i) dst[i] *= scale;
    }
  }
}

namespace {
// Items [0, n) claimed one at a time by the threads of one parallel region, with a wait that
// ends when every item is done (not when every thread has arrived): a late thread finds the
// items done by the others and moves on, so a phase boundary inside one region costs no wake-up.
class ClaimedWork {
 public:
  explicit ClaimedWork(int64_t n) : n_(n) {}
  // Runs f(i) for the items this thread claims, then waits until all n items are done.
  template <typename F>
  void Work(F&& f) {
    for (int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n_; i = next_.fetch_add(1, std::memory_order_relaxed)) {
      f(i);
      done_.fetch_add(1, std::memory_order_release);
    }
    for (int spins = 0; done_.load(std::memory_order_acquire) < n_; ++spins) {
      if (spins > 256) std::this_thread::yield();  // the claimant was preempted mid-item
    }
  }

 private:
  const int64_t n_;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> done_{0};
};

constexpr int64_t kQuantChunk = 16;  // tokens per claimed quantization item

// A range of chunk indices [front, back) packed in one word (front in the low 32 bits): the
// owner takes from the front, other threads from the back, each claim one compare-exchange.
bool ClaimFront(std::atomic<uint64_t>& r, uint32_t* j) {
  uint64_t v = r.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t f = uint32_t(v), b = uint32_t(v >> 32);
    if (f >= b) return false;
    if (r.compare_exchange_weak(v, v + 1, std::memory_order_relaxed)) {
      *j = f;
      return true;
    }
  }
}
bool ClaimBack(std::atomic<uint64_t>& r, uint32_t* j) {
  uint64_t v = r.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t f = uint32_t(v), b = uint32_t(v >> 32);
    if (f >= b) return false;
    if (r.compare_exchange_weak(v, (uint64_t(b - 1) << 32) | f, std::memory_order_relaxed)) {
      *j = b - 1;
      return true;
    }
  }
}

// Prefill batches of at least this many tokens take the Q8_0 GEMM path.
constexpr int32_t kGemmMinTokens = 8;
constexpr int64_t kGemmRowTile = 16;  // weight rows requantized and reused per pass
}  // namespace

// Prefill: each tile of weight rows is unpacked once and multiplied with every token's Q8_0
// activations by a multi-token kernel, so unpacking is paid once per row, not once per token.
// Affine formats (Q4_0/1, Q5_0/1, Q4_K, Q5_K) unpack exactly to 32-element groups (d, m,
// unsigned quants). Others are dequantized and requantized to Q8_0 (added error <= 1/254 of a
// block's largest weight, far below the quantization already in the file).
void CpuBackend::MatMulQ8Gemm(const Tensor& w, const float* x, int32_t n_tok, float* y) {
  const int64_t k = w.ne[0];
  const int64_t m = w.ne[1];
  const int64_t nb = k / 32;
  const size_t q8_row = RowSize(GgmlType::Q8_0, k);
  const size_t w_row = RowSize(w.type, k);
  if (act_q_.size() < q8_row * size_t(n_tok)) act_q_.resize(q8_row * size_t(n_tok));
  if (gemm_asum_.size() < size_t(nb) * size_t(n_tok)) gemm_asum_.resize(size_t(nb) * size_t(n_tok));
  const size_t nth = size_t(pool_.size());
  // Per thread: kGemmRowTile rows of quants (Q8_0 blocks or unpacked bytes), their d and m, and
  // one float row for the requantizing path.
  const size_t q_bytes = kGemmRowTile * std::max(q8_row, size_t(k));
  if (gemm_rows_.size() < nth * q_bytes) gemm_rows_.resize(nth * q_bytes);
  const size_t f_per = size_t(k) + 2 * kGemmRowTile * size_t(nb);
  if (gemm_f32_.size() < nth * f_per) gemm_f32_.resize(nth * f_per);
  uint8_t* act = act_q_.data();
  float* asum = gemm_asum_.data();
  // Exact affine unpacking pays off only with its SIMD kernel; otherwise requantize to Q8_0.
  const bool affine = quant::HasFastGemmAffine() && quant::IsAffine32(w.type);
  // A packed matrix (decode layout) is the only resident copy: tiles of 16 rows are unpacked
  // back to the file's blocks (exact) into per-thread scratch, then take the same path.
  const PackedWeights::Matrix* packed = packed_ != nullptr ? packed_->Find(w) : nullptr;
  if (packed != nullptr && gemm_unpacked_.size() < nth * size_t(kGemmRowTile) * w_row) {
    gemm_unpacked_.resize(nth * size_t(kGemmRowTile) * w_row);
  }
  pool_.ParallelFor(n_tok, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      quant::QuantizeActivations(GgmlType::Q8_0, x + t * k, act + size_t(t) * q8_row, k);
      if (affine) quant::Q8_0BlockSums(act + size_t(t) * q8_row, k, asum + t * nb);
    }
  });
  struct Ctx {
    CpuBackend* self;
    const Tensor* w;
    float* y;
    const uint8_t* act;
    const float* asum;
    int64_t k, m, nb;
    int32_t n_tok;
    size_t q8_row, w_row, q_bytes, f_per;
    bool affine;
    const PackedWeights::Matrix* packed;
  } c{this, &w, y, act, asum, k, m, nb, n_tok, q8_row, w_row, q_bytes, f_per, affine, packed};
  pool_.Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        // Row ranges in whole tiles, so a packed matrix's tiles are its 16-row groups.
        static_assert(kGemmRowTile == quant::kPackRows, "tiles must be packed groups");
        const int64_t per = (c.m + nth * kGemmRowTile - 1) / (nth * kGemmRowTile) * kGemmRowTile;
        const int64_t r0 = std::min<int64_t>(c.m, per * ith), r1 = std::min<int64_t>(c.m, r0 + per);
        uint8_t* rows = c.self->gemm_rows_.data() + size_t(ith) * c.q_bytes;
        float* f32 = c.self->gemm_f32_.data() + size_t(ith) * c.f_per;
        float* dd = f32 + c.k;
        float* mm = dd + kGemmRowTile * c.nb;
        const GgmlType t = c.w->type;
        for (int64_t r = r0; r < r1; r += kGemmRowTile) {
          const int64_t n = std::min<int64_t>(kGemmRowTile, r1 - r);
          const uint8_t* src = PackedWeights::FileRows(
              *c.w, c.packed, r, n, c.self->gemm_unpacked_.data() + size_t(ith) * size_t(kGemmRowTile) * c.w_row);
          if (t == GgmlType::Q8_0) {
            quant::GemmQ8_0(c.k, src, c.q8_row, n, c.act, c.q8_row, c.n_tok, c.y + r, c.m);
            continue;
          }
          if (c.affine) {
            for (int64_t i = 0; i < n; ++i) {
              quant::UnpackAffine32(t, src + size_t(i) * c.w_row, c.k, dd + i * c.nb, mm + i * c.nb,
                                    rows + size_t(i) * size_t(c.k));
            }
            quant::GemmAffine(c.k, quant::AffineRows{dd, mm, rows}, n, c.act, c.q8_row, c.asum, c.n_tok, c.y + r, c.m);
            continue;
          }
          for (int64_t i = 0; i < n; ++i) {
            quant::DequantizeRow(t, src + size_t(i) * c.w_row, f32, c.k);
            quant::QuantizeActivations(GgmlType::Q8_0, f32, rows + size_t(i) * c.q8_row, c.k);
          }
          quant::GemmQ8_0(c.k, rows, c.q8_row, n, c.act, c.q8_row, c.n_tok, c.y + r, c.m);
        }
      },
      &c);
}

// Prefill: x is quantized to Q8_0 once for all the weights that share it (Q, K, V; gate, up),
// then the threads take tiles of 16 weight rows from one counter over all of those weights, pack
// each tile into the row-interleaved layout and multiply it with every token. A packed tile
// (k * 16 bytes + scales: 40 KiB for k = 2048) stays in L1/L2 while the tokens stream past it;
// packing is paid once per weight row per call. Tiles are taken dynamically (one atomic per
// tile of tens of microseconds): a delayed thread (a shared machine, a slower core) takes fewer
// tiles instead of making the others wait at the join.
void CpuBackend::MatMulPacked(const Tensor* const* w, float* const* y, int32_t n_w, const float* x, int32_t n_tok) {
  const int64_t k = w[0]->ne[0];
  const int64_t nb = k / 32;
  const size_t q8_row = RowSize(GgmlType::Q8_0, k);
  if (act_q_.size() < q8_row * size_t(n_tok)) act_q_.resize(q8_row * size_t(n_tok));
  if (pack_ad_.size() < size_t(nb) * size_t(n_tok)) pack_ad_.resize(size_t(nb) * size_t(n_tok));
  // Per weight: its activation sums (layout depends on the group size and offset).
  // Weights of the same group size and offset share one set of tables (Q, K, V usually do).
  constexpr int32_t kMaxShared = 4;
  int32_t owner[kMaxShared];   // the first weight with the same tables
  size_t table_at[kMaxShared];  // offset of weight i's tables in pack_asum_ / pack_aoff_
  size_t table_size = 0;
  for (int32_t i = 0; i < n_w; ++i) {
    owner[i] = i;
    for (int32_t j = 0; j < i; ++j) {
      if (quant::PackGroup(w[j]->type) == quant::PackGroup(w[i]->type) &&
          quant::PackOffset(w[j]->type) == quant::PackOffset(w[i]->type)) {
        owner[i] = j;
        break;
      }
    }
    if (owner[i] == i) {
      table_at[i] = table_size;
      table_size += size_t(k / quant::PackGroup(w[i]->type)) * size_t(n_tok);
    } else {
      table_at[i] = table_at[owner[i]];
    }
  }
  if (pack_asum_.size() < table_size) pack_asum_.resize(table_size);
  if (pack_aoff_.size() < table_size) pack_aoff_.resize(table_size);
  size_t per_thread = 0;
  for (int32_t i = 0; i < n_w; ++i) {
    const size_t tile_bytes = (quant::PackedTileBytes(k, quant::PackGroup(w[i]->type)) + 63) / 64 * 64;
    per_thread = std::max(per_thread, tile_bytes + size_t(k) + 2 * size_t(k / 16) * 4 + 64);
  }
  // PackTile's scratch, then room for 16 file rows unpacked from a decode copy (packed_weights.h).
  const size_t scratch_bytes = (size_t(k) + 2 * size_t(k / 16) * 4 + 63) / 64 * 64;
  size_t max_row = 0;
  for (int32_t i = 0; i < n_w; ++i) max_row = std::max(max_row, RowSize(w[i]->type, k));
  per_thread += scratch_bytes + size_t(quant::kPackRows) * max_row;
  const size_t nth = size_t(pool_.size());
  if (pack_tiles_.size() < nth * per_thread) pack_tiles_.resize(nth * per_thread);
  uint8_t* act = act_q_.data();
  float* ad = pack_ad_.data();
  // Phase 1 (quantizing x) is split in chunks of tokens claimed from a counter; phase 2 starts
  // when every chunk is done, whoever did them. So a thread that starts late (woken late on a
  // busy machine) finds the work done instead of the others waiting for it, and one parallel
  // region serves both phases.
  auto quantize = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      uint8_t* at = act + size_t(t) * q8_row;
      for (int32_t i = 0; i < n_w; ++i) {
        if (owner[i] != i) continue;
        const int group = quant::PackGroup(w[i]->type), offset = quant::PackOffset(w[i]->type);
        const int64_t ng = k / group;
        float* asum = pack_asum_.data() + table_at[i] + size_t(t * ng);
        int32_t* aoff = pack_aoff_.data() + table_at[i] + size_t(t * ng);
        if (i == 0) {  // quantize and the first weight's tables in one pass
          quant::QuantizeQ8_0Tables(x + t * k, k, at, group, offset, ad + t * nb, asum, aoff);
        } else {
          quant::Q8_0Scales(at, k, group, offset, ad + t * nb, asum, aoff);
        }
      }
    }
  };
  using Quantize = decltype(quantize);
  struct Ctx {
    CpuBackend* self;
    const Tensor* const* w;
    float* const* y;
    int32_t n_w, n_tok;
    int64_t k;
    size_t per_thread, scratch_bytes;
    int64_t tile_end[kMaxShared];                  // cumulative tile counts over the weights
    const PackedWeights::Matrix* dec[kMaxShared];  // decode copies (looked up once per call)
    quant::PackedActs acts[kMaxShared];
    Quantize* quantize;
    ClaimedWork phase1;          // chunks of tokens to quantize
    std::atomic<int64_t> next;  // the next tile to take
  } c{this, w, y, n_w, n_tok, k, per_thread, scratch_bytes, {}, {}, {}, &quantize, ClaimedWork((n_tok + kQuantChunk - 1) / kQuantChunk), {0}};
  int64_t total = 0;
  for (int32_t i = 0; i < n_w; ++i) {
    total += (w[i]->ne[1] + quant::kPackRows - 1) / quant::kPackRows;
    c.tile_end[i] = total;
    c.dec[i] = packed_ != nullptr ? packed_->Find(*w[i]) : nullptr;
    const int32_t offset = quant::PackOffset(w[i]->type);
    c.acts[i] = quant::PackedActs{act, q8_row, ad, pack_asum_.data() + table_at[i],
                                  offset != 0 ? pack_aoff_.data() + table_at[i] : nullptr, offset};
  }
  pool_.Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        (void)nth;
        c.phase1.Work([&](int64_t i) {
          (*c.quantize)(i * kQuantChunk, std::min<int64_t>(c.n_tok, (i + 1) * kQuantChunk));
        });
        uint8_t* buf = c.self->pack_tiles_.data() + size_t(ith) * c.per_thread;
        uint8_t* tile = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf) + 63) & ~uintptr_t(63));
        const int64_t total = c.tile_end[c.n_w - 1];
        for (int64_t ti = c.next.fetch_add(1, std::memory_order_relaxed); ti < total;
             ti = c.next.fetch_add(1, std::memory_order_relaxed)) {
          int32_t i = 0;
          while (ti >= c.tile_end[i]) ++i;
          const Tensor& w = *c.w[i];
          const int group = quant::PackGroup(w.type);
          uint8_t* scratch = tile + (quant::PackedTileBytes(c.k, group) + 63) / 64 * 64;
          const int64_t m = w.ne[1];
          const size_t w_row = RowSize(w.type, c.k);
          const int64_t r = (ti - (i > 0 ? c.tile_end[i - 1] : 0)) * quant::kPackRows;
          const int64_t rows = std::min<int64_t>(quant::kPackRows, m - r);
          // From the decode copy in one pass where this CPU can; else its rows unpacked, then packed.
          const PackedWeights::Matrix* dec = c.dec[i];
          if (dec == nullptr ||
              !quant::PackTileFromDecode(w.type, dec->data + size_t(r / quant::kPackRows) * dec->group_bytes, rows, c.k,
                                         tile)) {
            const uint8_t* src = PackedWeights::FileRows(w, dec, r, rows, scratch + c.scratch_bytes);
            quant::PackTile(w.type, src, w_row, rows, c.k, tile, scratch);
          }
          quant::GemmPacked(tile, c.k, group, rows, c.acts[i], c.n_tok, c.y[i] + r, m);
        }
      },
      &c);
}

bool CpuBackend::UsePacked(const Tensor& w, int32_t n_tok) {
  // ZF_NO_PACKED_GEMM=1 keeps the previous prefill kernels (A/B measurements).
  static const bool packed_ok = quant::HasFastGemmPacked() && std::getenv("ZF_NO_PACKED_GEMM") == nullptr;
  return n_tok >= kGemmMinTokens && w.ne[0] % 32 == 0 && packed_ok && quant::PackGroup(w.type) != 0;
}

void CpuBackend::MatMulShared(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok) {
  bool packed = n <= 4;
  for (int32_t i = 0; i < n && packed; ++i) packed = UsePacked(*w[i], n_tok) && w[i]->ne[0] == w[0]->ne[0];
  if (packed) {
    MatMulPacked(w, y, n, x, n_tok);
    return;
  }
  if (DecodePacked(w, y, n, x, n_tok, nullptr)) return;
  for (int32_t i = 0; i < n; ++i) MatMul(*w[i], x, n_tok, y[i]);
}

void CpuBackend::MatMulGated(Activation act, const Tensor& w_gate, const Tensor& w_up, const float* x,
                             int32_t n_tok, float* gate, float* up) {
  const Tensor* w[2] = {&w_gate, &w_up};
  float* y[2] = {gate, up};
  if (w_gate.ne[1] == w_up.ne[1] && DecodePacked(w, y, 2, x, n_tok, &act)) return;
  Backend::MatMulGated(act, w_gate, w_up, x, n_tok, gate, up);
}

bool CpuBackend::DecodePacked(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok,
                              const Activation* gated) {
  constexpr int32_t kMax = 4;
  if (n_tok != 1 || n > kMax || packed_ == nullptr) return false;
  const int64_t k = w[0]->ne[0];
  struct Part {
    const Tensor* w;
    const PackedWeights::Matrix* p;
    const uint8_t* act;
    float* y;
    size_t bytes;  // of its packed copy
  } parts[kMax];
  // x quantized once per activation type (Q8_0, Q8_1 or Q8_K; the weights' types may differ):
  // owner[i] is the first part with part i's type, the one whose row the others read.
  int32_t owner[kMax];
  size_t act_off[kMax], act_bytes = 0, total = 0;
  for (int32_t i = 0; i < n; ++i) {
    const PackedWeights::Matrix* p = packed_->Find(*w[i]);
    if (p == nullptr || w[i]->ne[0] != k) return false;
    parts[i] = Part{w[i], p, nullptr, y[i], size_t(quant::PackedGroups(w[i]->ne[1])) * p->group_bytes};
    total += parts[i].bytes;
    owner[i] = i;
    for (int32_t j = 0; j < i && owner[i] == i; ++j) {
      if (quant::VecDotType(w[j]->type) == quant::VecDotType(w[i]->type)) owner[i] = j;
    }
    if (owner[i] == i) {
      act_off[i] = act_bytes;
      act_bytes += RowSize(quant::VecDotType(w[i]->type), k);
    } else {
      act_off[i] = act_off[owner[i]];
    }
  }
  if (act_q_.size() < act_bytes) act_q_.resize(act_bytes);
  for (int32_t i = 0; i < n; ++i) {
    parts[i].act = act_q_.data() + act_off[i];
    if (owner[i] == i) quant::QuantizeActivations(quant::VecDotType(w[i]->type), x, act_q_.data() + act_off[i], k);
  }
  // Each thread owns an equal share of the bytes (or of gate/up's rows), cut in chunks of about
  // kChunkBytes that it takes front to back, so its stream stays contiguous and prefetched
  // across chunk boundaries. A thread done with its share takes chunks from the back of the
  // others' (a cold start only for those): on a busy or shared machine one core is often slower,
  // and a fixed split left the other waiting (perf, SmolLM2 decode at 2 threads on Zen 3: the
  // pool's waits 10.8% -> 7.8% of samples; tok/s changed within the host's noise, Gemma
  // +5%). 32 KiB chunks measured no better: every call re-stages the activation row.
  constexpr size_t kChunkBytes = size_t(128) << 10;
  const int32_t nth = pool_.size();
  // Units split across threads: bytes of all parts, or (gated) 16-row groups of gate and up.
  int64_t units = int64_t(total), per = int64_t(kChunkBytes);
  if (gated != nullptr) {
    units = quant::PackedGroups(w[0]->ne[1]);
    per = std::max<int64_t>(1, int64_t(kChunkBytes / (parts[0].p->group_bytes + parts[1].p->group_bytes)));
  }
  for (int32_t t = 0; t < nth; ++t) {
    const int64_t share = units * (t + 1) / nth - units * t / nth;
    decode_ranges_[size_t(t)].range.store(uint64_t((share + per - 1) / per) << 32, std::memory_order_relaxed);
  }
  struct Ctx {
    const Part* parts;
    int32_t n;
    int64_t k;
    const Activation* gated;
    int64_t units, per;  // as above; chunk j of thread t: units [lo_t + j per, min(hi_t, ...))
    ChunkRange* ranges;
  } c{parts, n, k, gated, units, per, decode_ranges_.get()};
  pool_.Run(
      [](void* p, int32_t ith, int32_t nth) {
        const Ctx& c = *static_cast<const Ctx*>(p);
        const auto gemv = [&](const Part& part, int64_t g0, int64_t g1) {
          quant::GemvPacked(part.w->type, c.k, part.p->data, g0, g1, part.w->ne[1], part.act,
                            part.y + g0 * quant::kPackRows);
        };
        const auto run_chunk = [&](int32_t t, uint32_t j) {
          const int64_t hi = c.units * (t + 1) / nth;
          const int64_t u0 = c.units * t / nth + int64_t(j) * c.per, u1 = std::min(hi, u0 + c.per);
          if (c.gated != nullptr) {  // the same row range of gate and up, then the activation on it
            gemv(c.parts[0], u0, u1);
            gemv(c.parts[1], u0, u1);
            const int64_t m = c.parts[0].w->ne[1];
            const int64_t r0 = u0 * quant::kPackRows, r1 = std::min(m, u1 * quant::kPackRows);
            ApplyGated(*c.gated, c.parts[0].y + r0, c.parts[1].y + r0, r1 - r0);
            return;
          }
          // The 16-row groups whose first byte lies in [u0, u1) of all parts' bytes.
          size_t off = 0;
          for (int32_t i = 0; i < c.n; ++i) {
            const Part& part = c.parts[i];
            const int64_t groups = quant::PackedGroups(part.w->ne[1]);
            const size_t gb = part.p->group_bytes;
            const auto first = [&](int64_t cut) {
              return size_t(cut) <= off ? int64_t{0}
                                        : std::min<int64_t>(groups, int64_t((size_t(cut) - off + gb - 1) / gb));
            };
            const int64_t g0 = first(u0), g1 = first(u1);
            if (g0 < g1) gemv(part, g0, g1);
            off += part.bytes;
          }
        };
        uint32_t j;
        while (ClaimFront(c.ranges[ith].range, &j)) run_chunk(ith, j);
        for (int32_t v = 1; v < nth; ++v) {
          const int32_t t = (ith + v) % nth;
          while (ClaimBack(c.ranges[t].range, &j)) run_chunk(t, j);
        }
      },
      &c);
  return true;
}

void CpuBackend::MatMul(const Tensor& w, const float* x, int32_t n_tok, float* y) {
  const int64_t k = w.ne[0];
  if (UsePacked(w, n_tok)) {
    const Tensor* ws[1] = {&w};
    float* ys[1] = {y};
    MatMulPacked(ws, ys, 1, x, n_tok);
    return;
  }
  if (n_tok >= kGemmMinTokens && k % 32 == 0 && w.type != GgmlType::F32 && w.type != GgmlType::F16 &&
      w.type != GgmlType::BF16) {
    MatMulQ8Gemm(w, x, n_tok, y);
    return;
  }
  const int64_t m = w.ne[1];
  const GgmlType act_type = quant::VecDotType(w.type);
  const size_t act_row = RowSize(act_type, k);
  const size_t w_row = RowSize(w.type, k);
  if (act_q_.size() < act_row * size_t(n_tok)) act_q_.resize(act_row * size_t(n_tok));
  uint8_t* act = act_q_.data();
  if (n_tok == 1) {  // decode: one row is quicker here than a round trip through the pool
    quant::QuantizeActivations(act_type, x, act, k);
  } else {
    pool_.ParallelFor(n_tok, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) quant::QuantizeActivations(act_type, x + t * k, act + size_t(t) * act_row, k);
    });
  }
  if (const PackedWeights::Matrix* p = packed_ != nullptr ? packed_->Find(w) : nullptr) {
    // Row-interleaved copy (quant/packed.h): 16-row groups split across threads.
    pool_.ParallelFor(quant::PackedGroups(m), [&](int64_t b, int64_t e) {
      for (int32_t t = 0; t < n_tok; ++t) {
        quant::GemvPacked(w.type, k, p->data, b, e, m, act + size_t(t) * act_row, y + int64_t{t} * m + b * quant::kPackRows);
      }
    });
    return;
  }
  // Rows split across threads; several rows per kernel pass for each (few) token(s).
  pool_.ParallelFor(m, [&](int64_t b, int64_t e) {
    for (int32_t t = 0; t < n_tok; ++t) {
      quant::Gemv(w.type, k, w.data + size_t(b) * w_row, w_row, e - b, act + size_t(t) * act_row, y + int64_t{t} * m + b);
    }
  });
}

namespace {
// One row: the sum of squares in double (8 partial sums: independent chains the compiler can
// keep in vector lanes; the order change is far below float precision).
void RmsNormRow(const float* x, const float* w, int32_t n, float eps, float* y) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += double(x[i + j]) * double(x[i + j]);
  }
  double sum = 0.0;
  for (; i < n; ++i) sum += double(x[i]) * double(x[i]);
  sum += ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  const float scale = 1.0f / std::sqrt(float(sum / n) + eps);
  for (int32_t k = 0; k < n; ++k) y[k] = x[k] * scale * w[k];
}
}  // namespace

void CpuBackend::RmsNorm(const float* x, const float* w, int32_t rows, int32_t n, float eps, float* y) {
  // Only very large calls are split across threads: a norm is a light pass over memory (tens of
  // microseconds for a 512-token prefill), less than what waking a worker on a busy machine can
  // cost.
  if (int64_t{rows} * n >= (int64_t{1} << 21)) {
    pool_.ParallelFor(rows, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) RmsNormRow(x + r * n, w, n, eps, y + r * n);
    });
    return;
  }
  for (int32_t r = 0; r < rows; ++r) RmsNormRow(x + int64_t{r} * n, w, n, eps, y + int64_t{r} * n);
}

void CpuBackend::AddBias(float* x, const float* b, int32_t rows, int32_t n) {
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t i = 0; i < n; ++i) x[int64_t{r} * n + i] += b[i];
  }
}

void CpuBackend::Add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuBackend::AddScaled(float* x, const float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] += s * y[i];
}

void CpuBackend::Scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void CpuBackend::LayerNorm(const float* x, const float* w, const float* b, int32_t rows, int32_t n, float eps,
                           float* y) {
  for (int32_t r = 0; r < rows; ++r) {
    const float* xr = x + int64_t{r} * n;
    float* yr = y + int64_t{r} * n;
    double sum = 0.0;
    for (int32_t i = 0; i < n; ++i) sum += xr[i];
    const float mean = float(sum / n);
    double var = 0.0;
    for (int32_t i = 0; i < n; ++i) var += double(xr[i] - mean) * double(xr[i] - mean);
    const float inv = 1.0f / std::sqrt(float(var / n) + eps);
    for (int32_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * w[i] + (b != nullptr ? b[i] : 0.0f);
  }
}

void CpuBackend::Rope(float* x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* pos,
                      const RopeParams& rp) {
  const int32_t half = rp.n_rot / 2;
  const float theta_scale = std::pow(rp.base, -2.0f / float(rp.n_rot));
  const size_t nth = size_t(pool_.size());
  // Per thread: the cos/sin of one position's angles (sized once: no allocation per call).
  if (rope_cs_.size() < nth * size_t(half) * 2) {
    rope_cs_.resize(nth * size_t(half) * 2);
    rope_key_ = RopeKey{};
  }
  // One token: the angles of the last single-token call are reused when nothing changed (the
  // caller computes slot 0; any other call may overwrite it, so it forgets the key).
  const RopeKey key{n_tok == 1 ? pos[0] : -1, rp.n_rot, rp.base, rp.freq_scale, rp.attn_factor, rp.freq_factors};
  const bool reuse = n_tok == 1 && key == rope_key_;
  rope_key_ = n_tok == 1 ? key : RopeKey{};
  auto run = [&](int32_t ith, int32_t nth_run, int32_t t0, int32_t t1) {
    (void)nth_run;
    float* cs = rope_cs_.data() + size_t(ith) * size_t(half) * 2;
    for (int32_t t = t0; t < t1; ++t) {
      float theta = float(pos[t]) * rp.freq_scale;
      if (!reuse) {
        for (int32_t i = 0; i < half; ++i) {
          const float th = rp.freq_factors ? theta / rp.freq_factors[i] : theta;
          cs[size_t(2 * i)] = std::cos(th) * rp.attn_factor;
          cs[size_t(2 * i + 1)] = std::sin(th) * rp.attn_factor;
          theta *= theta_scale;
        }
      }
      for (int32_t h = 0; h < n_heads; ++h) {
        float* v = x + (int64_t{t} * n_heads + h) * head_dim;
        for (int32_t i = 0; i < half; ++i) {
          const float c = cs[size_t(2 * i)], s = cs[size_t(2 * i + 1)];
          const int32_t i0 = rp.style == RopeStyle::kNorm ? 2 * i : i;
          const int32_t i1 = rp.style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
          const float a = v[i0], b = v[i1];
          v[i0] = a * c - b * s;
          v[i1] = a * s + b * c;
        }
      }
    }
  };
  if (int64_t{n_tok} * n_heads * head_dim < (int64_t{1} << 21)) {  // small (decode, K of a prefill): on the caller
    run(0, 1, 0, n_tok);
    return;
  }
  auto split = [&](int32_t ith, int32_t nth_run) {
    run(ith, nth_run, int32_t(int64_t{n_tok} * ith / nth_run), int32_t(int64_t{n_tok} * (ith + 1) / nth_run));
  };
  using Split = decltype(split);
  pool_.Run([](void* p, int32_t ith, int32_t nth_run) { (*static_cast<Split*>(p))(ith, nth_run); }, &split);
}

namespace {

// GELU (tanh approximation) as the reference computes it: a table over every F16 input, with
// the result rounded to F16; inputs beyond +-10 bypass the table.
const float* GeluTable() {
  static const std::vector<float> table = [] {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoef = 0.044715f;
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = quant::Fp16ToFp32(uint16_t(h));
      const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
      t[h] = quant::Fp16ToFp32(quant::Fp32ToFp16(g));
    }
    return t;
  }();
  return table.data();
}

void GeluMul(float* gate, const float* up, int64_t n) {
  const float* table = GeluTable();
  uint16_t h[256];
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    const int64_t len = std::min<int64_t>(256, n - i0);
    quant::QuantizeActivations(GgmlType::F16, gate + i0, h, len);  // vectorized F32 -> F16
    for (int64_t i = 0; i < len; ++i) {
      const float x = gate[i0 + i];
      const float g = x <= -10.0f ? 0.0f : x >= 10.0f ? x : table[h[i]];
      gate[i0 + i] = g * up[i0 + i];
    }
  }
}

}  // namespace

void CpuBackend::ApplyGated(Activation act, float* gate, const float* up, int64_t n) {
  if (act == Activation::kGeluTanh) {
    GeluMul(gate, up, n);
  } else {
    act::SiluMul(gate, up, n);
  }
}

// A plain activation is the gated one with up = 1: the same kernels, rounding and tables.
void CpuBackend::Activate(Activation act, float* x, int64_t n) {
  static const std::vector<float> ones(256, 1.0f);
  for (int64_t i = 0; i < n; i += 256) ApplyGated(act, x + i, ones.data(), std::min<int64_t>(256, n - i));
}

void CpuBackend::GatedActivation(Activation act, float* gate, const float* up, int64_t n) {
  pool_.ParallelFor(n, [&](int64_t b, int64_t e) { ApplyGated(act, gate + b, up + b, e - b); });
}

void CpuBackend::StoreKv(int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) {
  const size_t elem = kv_type_ == KvType::kF16 ? 2 : 4;
  for (int32_t t = 0; t < n_tok; ++t) {
    const int64_t slot = int64_t{layer} * n_ctx_ + pos0 + t;
    const float* kr = k + int64_t{t} * k_width_;
    const float* vr = v + int64_t{t} * v_width_;
    uint8_t* kd = k_cache_.data() + size_t(slot) * size_t(k_width_) * elem;
    uint8_t* vd = v_cache_.data() + size_t(slot) * size_t(v_width_) * elem;
    if (kv_type_ == KvType::kF16) {
      quant::QuantizeActivations(GgmlType::F16, kr, kd, k_width_);  // vectorized F32 -> F16
      quant::QuantizeActivations(GgmlType::F16, vr, vd, v_width_);
    } else {
      std::memcpy(kd, kr, size_t(k_width_) * 4);
      std::memcpy(vd, vr, size_t(v_width_) * 4);
    }
  }
}

// Per thread: a V head in F32, Q in the cache type, and the scores of one context row.
// Decode (AttentionDecode) uses the same block: kDecodeHeads Q rows, one F16 staging row, and
// kDecodeHeads score rows (a head is at most k_width wide).
size_t CpuBackend::AttnScratchPerThread(int32_t n_ctx, int32_t k_width, int32_t v_width) {
  const size_t per_row = size_t(v_width) + 2 * size_t(k_width) + size_t(n_ctx);
  const size_t decode = size_t(attn::kDecodeHeads) * (size_t(n_ctx) + size_t(k_width)) + size_t(k_width);
  return std::max(per_row, decode);
}

void CpuBackend::AttentionDecode(int32_t layer, const float* q, int32_t pos0, const AttentionParams& ap, float* out) {
  struct Ctx {
    CpuBackend* self;
    const float* q;
    float* out;
    const AttentionParams* ap;
    int32_t layer, pos0;
  } c{this, q, out, &ap, layer, pos0};
  pool_.Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        CpuBackend& self = *c.self;
        const AttentionParams& ap = *c.ap;
        const int32_t group = ap.n_head / ap.n_head_kv, dk = ap.head_dim_k, dv = ap.head_dim_v;
        const int32_t lo = ap.window > 0 ? std::max(0, c.pos0 - ap.window + 1) : 0;
        const int64_t slot0 = int64_t{c.layer} * self.n_ctx_ + lo;
        const auto* kc = reinterpret_cast<const uint16_t*>(self.k_cache_.data()) + slot0 * self.k_width_;
        const auto* vc = reinterpret_cast<const uint16_t*>(self.v_cache_.data()) + slot0 * self.v_width_;
        float* qs = self.attn_scratch_.data() + size_t(ith) * AttnScratchPerThread(self.n_ctx_, self.k_width_, self.v_width_);
        float* q16 = qs + size_t(attn::kDecodeHeads) * size_t(dk);
        float* scores = q16 + size_t(dk);
        // This thread's heads [h0, h1), taken a KV group (and at most kDecodeHeads) at a time.
        const int32_t h0 = int32_t(int64_t{ap.n_head} * ith / nth), h1 = int32_t(int64_t{ap.n_head} * (ith + 1) / nth);
        for (int32_t h = h0; h < h1;) {
          const int32_t g = h / group;
          const int32_t n_q = std::min({h1 - h, (g + 1) * group - h, attn::kDecodeHeads});
          float* outp[attn::kDecodeHeads];
          for (int32_t i = 0; i < n_q; ++i) {
            // Q rounded to F16, as the reference multiplies it with the F16 cache.
            quant::QuantizeActivations(GgmlType::F16, c.q + int64_t{h + i} * dk, q16, dk);
            quant::DequantizeRow(GgmlType::F16, q16, qs + size_t(i) * size_t(dk), dk);
            outp[i] = c.out + int64_t{h + i} * dv;
          }
          attn::DecodeGroup dg;
          dg.q = qs;
          dg.n_q = n_q;
          dg.d_k = dk;
          dg.d_v = dv;
          dg.k = kc + int64_t{g} * dk;
          dg.k_stride = self.k_width_;
          dg.v = vc + int64_t{g} * dv;
          dg.v_stride = self.v_width_;
          dg.n_keys = c.pos0 - lo + 1;
          dg.scale = ap.scale;
          dg.softcap = ap.softcap;
          dg.s = scores;
          dg.out = outp;
          attn::RunDecode(dg);
          h += n_q;
        }
      },
      &c);
}

// Prefill: per KV head, blocks of kAttnRows query rows ((token, head) pairs of that head's group)
// go through the blocked kernel. This layer's K is staged once transposed (head, dimension,
// position) in F32 and V as F32 rows. With an F16 cache, Q is rounded to F16 as the reference
// does (products and sums in F32).
void CpuBackend::AttentionBlocked(int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                                  const AttentionParams& ap, float* out) {
  const bool f16 = kv_type_ == KvType::kF16;
  const size_t elem = f16 ? 2 : 4;
  const int32_t n_pos = pos0 + n_tok;
  const int32_t dk = ap.head_dim_k;
  const int64_t kt_stride = (int64_t{n_pos} + attn::kKeyPad + 15) / 16 * 16;
  const int64_t layer_base = int64_t{layer} * n_ctx_;
  const uint8_t* kdata = k_cache_.data() + size_t(layer_base) * size_t(k_width_) * elem;
  const uint8_t* vdata = v_cache_.data() + size_t(layer_base) * size_t(v_width_) * elem;
  const size_t nth = size_t(pool_.size());
  constexpr int32_t kStageRows = 16;  // K rows converted per step before the transposing scatter
  const size_t per_thread = size_t(attn::kAttnRows) * size_t(dk) +
                            size_t(attn::kAttnRows) * size_t(attn::ScoreStride(n_pos)) +
                            size_t(kStageRows) * size_t(k_width_);
  if (kt_stage_.size() < size_t(k_width_) * size_t(kt_stride)) kt_stage_.resize(size_t(k_width_) * size_t(kt_stride));
  if (attn_block_.size() < nth * per_thread) attn_block_.resize(nth * per_thread);
  float* kt = kt_stage_.data();
  const float* vf = reinterpret_cast<const float*>(vdata);
  if (f16) {
    if (kv_stage_.size() < size_t(n_pos) * size_t(v_width_)) kv_stage_.resize(size_t(n_ctx_) * size_t(v_width_));
    vf = kv_stage_.data();
  }
  float* blk = attn_block_.data();
  const int32_t kw = k_width_, vw = v_width_;
  // Stage K transposed (and V as F32 rows for an F16 cache), positions split across threads.
  const int64_t n_chunks = (n_pos + kStageRows - 1) / kStageRows;
  // Phase 1, one item per chunk of kStageRows positions (the last item also zeroes the padding
  // keys), claimed inside the same parallel region as the blocks (see ClaimedWork).
  auto stage = [&](int32_t ith, int64_t c) {
    float* tmp = blk + size_t(ith) * per_thread + size_t(attn::kAttnRows) * size_t(dk) +
                 size_t(attn::kAttnRows) * size_t(attn::ScoreStride(n_pos));
    if (c == n_chunks) {  // zero keys past n_pos (read by the 64-key tiles)
      for (int32_t i = 0; i < kw; ++i) {
        std::fill(kt + size_t(i) * size_t(kt_stride) + size_t(n_pos), kt + size_t(i + 1) * size_t(kt_stride), 0.0f);
      }
      return;
    }
    const int32_t p0 = int32_t(c * kStageRows), n = std::min(kStageRows, n_pos - p0);
    if (f16) {
      quant::DequantizeRow(GgmlType::F16, kdata + size_t(p0) * size_t(kw) * 2, tmp, int64_t{n} * kw);
      quant::DequantizeRow(GgmlType::F16, vdata + size_t(p0) * size_t(vw) * 2, kv_stage_.data() + size_t(p0) * size_t(vw),
                           int64_t{n} * vw);
    } else {
      std::memcpy(tmp, kdata + size_t(p0) * size_t(kw) * 4, size_t(n) * size_t(kw) * 4);
    }
    for (int32_t i = 0; i < kw; ++i) {  // element i of a K row: head i / dk, dimension i % dk
      float* dst = kt + size_t(i) * size_t(kt_stride) + size_t(p0);
      for (int32_t r = 0; r < n; ++r) dst[r] = tmp[size_t(r) * size_t(kw) + size_t(i)];
    }
  };
  using Stage = decltype(stage);
  struct Ctx {
    const float* q;
    float* out;
    const AttentionParams* ap;
    const float* kt;
    const float* vf;
    float* blk;
    size_t per_thread;
    int64_t kt_stride;
    int32_t n_tok, pos0, n_pos, vw;
    bool f16;
    Stage* stage;
    ClaimedWork phase1;          // staging chunks
    std::atomic<int64_t> next;  // the next item (block of query rows) to take
  } c{q, out, &ap, kt, vf, blk, per_thread, kt_stride, n_tok, pos0, n_pos, vw, f16, &stage, ClaimedWork(n_chunks + 1), {0}};
  pool_.Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        (void)nth;
        c.phase1.Work([&](int64_t i) { (*c.stage)(ith, i); });
        const AttentionParams& ap = *c.ap;
        const int32_t group = ap.n_head / ap.n_head_kv, dk = ap.head_dim_k, dv = ap.head_dim_v;
        const int64_t rows_per_head = int64_t{c.n_tok} * group;
        const int64_t n_blocks = (rows_per_head + attn::kAttnRows - 1) / attn::kAttnRows;
        float* qb = c.blk + size_t(ith) * c.per_thread;
        float* sb = qb + size_t(attn::kAttnRows) * size_t(dk);
        int32_t lo[attn::kAttnRows], hi[attn::kAttnRows];
        float* outp[attn::kAttnRows];
        // Items taken dynamically, the costliest (last rows: the most keys) first.
        const int64_t n_items = n_blocks * ap.n_head_kv;
        for (int64_t taken = c.next.fetch_add(1, std::memory_order_relaxed); taken < n_items;
             taken = c.next.fetch_add(1, std::memory_order_relaxed)) {
          const int64_t it = n_items - 1 - taken;
          const int32_t g = int32_t(it % ap.n_head_kv);
          const int64_t r0 = (it / ap.n_head_kv) * attn::kAttnRows;
          const int32_t rows = int32_t(std::min<int64_t>(attn::kAttnRows, rows_per_head - r0));
          int32_t key0 = INT32_MAX, key1 = 0;
          for (int32_t i = 0; i < attn::kAttnRows; ++i) {
            float* qi = qb + size_t(i) * size_t(dk);
            if (i >= rows) {
              std::fill(qi, qi + dk, 0.0f);
              continue;
            }
            const int32_t t = int32_t((r0 + i) / group), h = g * group + int32_t((r0 + i) % group);
            const float* src = c.q + int64_t{t} * ap.n_head * dk + int64_t{h} * dk;
            if (c.f16) {  // F16-rounded Q (sb as the F16 staging row)
              quant::QuantizeActivations(GgmlType::F16, src, sb, dk);
              quant::DequantizeRow(GgmlType::F16, sb, qi, dk);
            } else {
              std::copy(src, src + dk, qi);
            }
            const int32_t p_q = c.pos0 + t;
            lo[i] = ap.window > 0 ? std::max(0, p_q - ap.window + 1) : 0;
            hi[i] = p_q;
            key0 = std::min(key0, lo[i]);
            key1 = std::max(key1, hi[i]);
            outp[i] = c.out + int64_t{t} * ap.n_head * dv + int64_t{h} * dv;
          }
          for (int32_t i = 0; i < rows; ++i) {
            lo[i] -= key0;
            hi[i] -= key0;
          }
          attn::Block b;
          b.q = qb;
          b.rows = rows;
          b.d_k = dk;
          b.d_v = dv;
          b.kt = c.kt + size_t(g) * size_t(dk) * size_t(c.kt_stride) + size_t(key0);
          b.kt_stride = c.kt_stride;
          b.v = c.vf + size_t(key0) * size_t(c.vw) + size_t(g) * size_t(dv);
          b.v_stride = c.vw;
          b.n_keys = key1 - key0 + 1;
          b.lo = lo;
          b.hi = hi;
          b.scale = ap.scale;
          b.softcap = ap.softcap;
          b.s = sb;
          b.out = outp;
          attn::RunBlock(b);
        }
      },
      &c);
}

void CpuBackend::Attention(int32_t layer, const float* q, int32_t n_tok, int32_t pos0, const AttentionParams& ap,
                           float* out) {
  static const bool blocked_ok = attn::HasFastBlock() && std::getenv("ZF_NO_BLOCKED_ATTN") == nullptr;
  if (n_tok > 1 && blocked_ok) {
    AttentionBlocked(layer, q, n_tok, pos0, ap, out);
    return;
  }
  if (n_tok == 1 && blocked_ok && kv_type_ == KvType::kF16) {  // HasFastDecode() == HasFastBlock()
    AttentionDecode(layer, q, pos0, ap, out);
    return;
  }
  const int32_t group = ap.n_head / ap.n_head_kv;
  const int32_t q_width = ap.n_head * ap.head_dim_k;
  const int32_t o_width = ap.n_head * ap.head_dim_v;
  const int64_t layer_base = int64_t{layer} * n_ctx_;
  const size_t per_thread = AttnScratchPerThread(n_ctx_, k_width_, v_width_);
  // Prefill with an F16 cache: this layer's K/V rows are converted to F32 once (in parallel)
  // and shared by every query, instead of converting them again for each (token, head).
  const bool f16 = kv_type_ == KvType::kF16;
  const bool staged = f16 && n_tok > 1;
  const uint8_t* kdata = k_cache_.data() + size_t(layer_base) * size_t(k_width_) * (f16 ? 2 : 4);
  const uint8_t* vdata = v_cache_.data() + size_t(layer_base) * size_t(v_width_) * (f16 ? 2 : 4);
  if (staged) {
    const int32_t n_pos = pos0 + n_tok;
    if (kv_stage_.size() < size_t(n_pos) * size_t(k_width_ + v_width_)) {
      kv_stage_.resize(size_t(n_ctx_) * size_t(k_width_ + v_width_));
    }
    float* kf = kv_stage_.data();
    float* vf = kf + size_t(n_pos) * size_t(k_width_);
    pool_.ParallelFor(n_pos, [&](int64_t b, int64_t e) {
      quant::DequantizeRow(GgmlType::F16, kdata + size_t(b) * size_t(k_width_) * 2, kf + size_t(b) * size_t(k_width_),
                           (e - b) * k_width_);
      quant::DequantizeRow(GgmlType::F16, vdata + size_t(b) * size_t(v_width_) * 2, vf + size_t(b) * size_t(v_width_),
                           (e - b) * v_width_);
    });
    kdata = reinterpret_cast<const uint8_t*>(kf);
    vdata = reinterpret_cast<const uint8_t*>(vf);
  }
  struct Ctx {
    CpuBackend* self;
    const float* q;
    float* out;
    const AttentionParams* ap;
    int32_t n_tok, pos0, group, q_width, o_width;
    size_t per_thread;
    const uint8_t* kdata;  // this layer's position 0 (cache type, or F32 when staged)
    const uint8_t* vdata;
    bool f16, staged;
  } c{this, q, out, &ap, n_tok, pos0, group, q_width, o_width, per_thread, kdata, vdata, f16, staged};
  pool_.Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        CpuBackend& self = *c.self;
        const AttentionParams& ap = *c.ap;
        float* row = self.attn_scratch_.data() + size_t(ith) * c.per_thread;
        const int64_t n_pairs = int64_t{c.n_tok} * ap.n_head;
        for (int64_t pair = ith; pair < n_pairs; pair += nth) {
          const int32_t t = int32_t(pair / ap.n_head);
          const int32_t h = int32_t(pair % ap.n_head);
          const int32_t g = h / c.group;
          const int32_t p_q = c.pos0 + t;
          const int32_t lo = ap.window > 0 ? std::max(0, p_q - ap.window + 1) : 0;
          const float* qh = c.q + int64_t{t} * c.q_width + int64_t{h} * ap.head_dim_k;
          // With an F16 cache, Q is rounded to F16 and dotted with K in F16 (F32 sums), as the
          // reference does; softmax and the weighted sum of V are in F32. Rows are read in
          // place through the dispatched (AVX2) kernels, one KV head at a time.
          const GgmlType kv = (c.f16 && !c.staged) ? GgmlType::F16 : GgmlType::F32;
          const size_t elem = kv == GgmlType::F16 ? 2 : 4;
          float* vrow = row;                                          // one V head in F32
          auto* q16 = reinterpret_cast<uint8_t*>(vrow + ap.head_dim_v);  // Q in the rows' type
          float* scores = reinterpret_cast<float*>(q16 + size_t(ap.head_dim_k) * 4);
          if (c.staged) {  // F16-rounded Q, kept in F32 to meet the staged F32 rows
            quant::QuantizeActivations(GgmlType::F16, qh, scores, ap.head_dim_k);
            quant::DequantizeRow(GgmlType::F16, scores, reinterpret_cast<float*>(q16), ap.head_dim_k);
          } else {
            quant::QuantizeActivations(kv, qh, q16, ap.head_dim_k);
          }
          const uint8_t* kbase = c.kdata + size_t(g) * ap.head_dim_k * elem;
          const uint8_t* vbase = c.vdata + size_t(g) * ap.head_dim_v * elem;
          float mx = -INFINITY;
          for (int32_t j = lo; j <= p_q; ++j) {
            const size_t slot = size_t(j);
            float s = quant::VecDot(kv, ap.head_dim_k, kbase + slot * self.k_width_ * elem, q16);
            s *= ap.scale;
            if (ap.softcap > 0.0f) s = ap.softcap * std::tanh(s / ap.softcap);
            scores[j - lo] = s;
            mx = std::max(mx, s);
          }
          const int32_t n = p_q - lo + 1;
          float sum = 0.0f;
          for (int32_t j = 0; j < n; ++j) {
            scores[j] = std::exp(scores[j] - mx);
            sum += scores[j];
          }
          const float inv = 1.0f / sum;
          float* oh = c.out + int64_t{t} * c.o_width + int64_t{h} * ap.head_dim_v;
          std::fill(oh, oh + ap.head_dim_v, 0.0f);
          for (int32_t j = 0; j < n; ++j) {
            const size_t slot = size_t(lo + j);
            const float w = scores[j] * inv;
            const float* vh = vrow;
            if (kv == GgmlType::F32) {
              vh = reinterpret_cast<const float*>(vbase + slot * self.v_width_ * elem);
            } else {
              quant::DequantizeRow(kv, vbase + slot * self.v_width_ * elem, vrow, ap.head_dim_v);
            }
            quant::AxpyF32(ap.head_dim_v, w, vh, oh);
          }
        }
      },
      &c);
}

void CpuBackend::Softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

std::unique_ptr<Backend> CreateCpuBackend(int32_t n_threads, const PackedWeights* packed) {
  return std::unique_ptr<Backend>(new CpuBackend(n_threads, packed));
}

}  // namespace zf::engine
