// CPU matmuls: the decode GEMV on the packed copies (DecodePacked), the prefill GEMM on tiles
// built from them (MatMulPacked), the Q8_0 GEMM for other quantized types (MatMulQ8Gemm), and
// the row-at-a-time path for the rest; which one runs is decided in ChoosePath.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common/switches.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/work_claim.h"
#include "quant/gemm_packed.h"
#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {
constexpr int64_t kQuantChunk = 16;  // tokens per claimed quantization item

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
  const size_t nth = size_t(pool_->size());
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
  pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
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
  pool_->Run(
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
          // The unpacking scratch exists only for a packed matrix (no offset from a null pointer).
          uint8_t* unpacked = c.packed != nullptr
                                  ? c.self->gemm_unpacked_.data() + size_t(ith) * size_t(kGemmRowTile) * c.w_row
                                  : nullptr;
          const uint8_t* src = PackedWeights::FileRows(*c.w, c.packed, r, n, unpacked);
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
  const size_t nth = size_t(pool_->size());
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
  pool_->Run(
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
  static const bool packed_ok = quant::HasFastGemmPacked() && !env::NoPackedGemm();
  return n_tok >= kGemmMinTokens && w.ne[0] % 32 == 0 && packed_ok && quant::PackGroup(w.type) != 0;
}

void CpuBackend::MatMulShared(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok) {
  switch (ChoosePath(w, n, n_tok)) {
    case MatMulPath::kGemmPacked: MatMulPacked(w, y, n, x, n_tok); return;
    case MatMulPath::kDecodePacked: DecodePacked(w, y, n, x, n_tok, nullptr); return;
    default: for (int32_t i = 0; i < n; ++i) MatMul(*w[i], x, n_tok, y[i]);
  }
}

void CpuBackend::MatMulGated(Activation act, const Tensor& w_gate, const Tensor& w_up, const float* x,
                             int32_t n_tok, float* gate, float* up) {
  const Tensor* w[2] = {&w_gate, &w_up};
  float* y[2] = {gate, up};
  if (w_gate.ne[1] == w_up.ne[1] && ChoosePath(w, 2, n_tok) == MatMulPath::kDecodePacked &&
      DecodePacked(w, y, 2, x, n_tok, &act)) {
    return;
  }
  Backend::MatMulGated(act, w_gate, w_up, x, n_tok, gate, up);
}

bool CpuBackend::DecodePacked(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok,
                              const Activation* gated) {
  constexpr int32_t kMax = 4;
  // One token, or (batched decode, SetBatchInvariant) up to kMaxRows sequences' tokens: every
  // row then goes through GemvPackedMulti, which reduces each row exactly as GemvPacked does.
  // More rows (exact prefill) go through each chunk of weights in slices of kMaxRows, all in one
  // parallel region: a region per slice cost a pool round trip each and streamed the whole
  // matrix once per slice; now a chunk's bytes are re-read from L2. Each row's result does not
  // depend on the others, so the slicing changes no bits.
  // Above kRegionRows, regions of kRegionRows (the quantized rows' scratch stays bounded).
  constexpr int32_t kMaxRows = 64, kRegionRows = 512;
  if (n_tok < 1 || (n_tok > 1 && !invariant_) || n > kMax || packed_ == nullptr) return false;
  const int64_t k = w[0]->ne[0];
  if (n_tok > kRegionRows) {
    for (int32_t t0 = 0; t0 < n_tok; t0 += kRegionRows) {
      float* ys[kMax];
      for (int32_t i = 0; i < n; ++i) ys[i] = y[i] + int64_t{t0} * w[i]->ne[1];
      if (!DecodePacked(w, ys, n, x + int64_t{t0} * k, std::min(kRegionRows, n_tok - t0), gated)) return false;
    }
    return true;
  }
  struct Part {
    const Tensor* w;
    const PackedWeights::Matrix* p;
    const uint8_t* act;  // token t's row at act + t * act_stride
    float* y;            // token t's outputs at y + t * w->ne[1]
    size_t bytes;        // of its packed copy
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
  if (act_q_.size() < act_bytes * size_t(n_tok)) act_q_.resize(act_bytes * size_t(n_tok));
  // Row t's activations in each type its weights read. One token: here, on the caller (a pool
  // round trip costs more); batched rows: claimed by the threads inside the region below.
  const auto quantize_row = [&](int64_t t) {
    for (int32_t i = 0; i < n; ++i) {
      if (owner[i] != i) continue;
      quant::QuantizeActivations(quant::VecDotType(w[i]->type), x + t * k, act_q_.data() + size_t(t) * act_bytes + act_off[i], k);
    }
  };
  for (int32_t i = 0; i < n; ++i) parts[i].act = act_q_.data() + act_off[i];
  if (n_tok == 1) quantize_row(0);
  // Each thread owns an equal share of the bytes (or of gate/up's rows), cut in chunks of about
  // kChunkBytes that it takes front to back, so its stream stays contiguous and prefetched
  // across chunk boundaries. A thread done with its share takes chunks from the back of the
  // others' (a cold start only for those): on a busy or shared machine one core is often slower,
  // and a fixed split left the other waiting (perf, SmolLM2 decode at 2 threads on Zen 3: the
  // pool's waits 10.8% -> 7.8% of samples; tok/s changed within the host's noise, Gemma
  // +5%). 32 KiB chunks measured no better: every call re-stages the activation row.
  // Gate/up alternate between the two matrices every chunk (each stream restarts the hardware
  // prefetcher): 512 KiB chunks there (256 KiB of each) measured +7% decode at 1 thread and
  // +9% at 2 on the Qwen3-1.7B shape, +12% SmolLM2 and +2% Gemma 3 at 2 threads over 128 KiB
  // (Zen 4, `zerfoo bench -p 0 -n 32/128 -r 2`, alternating 3 times); for the other products
  // the chunk size changed nothing measurable.
  constexpr size_t kChunkBytes = size_t(128) << 10, kGatedChunkBytes = size_t(512) << 10;
  const int32_t nth = pool_->size();
  // Units split across threads: bytes of all parts, or (gated) 16-row groups of gate and up.
  int64_t units = int64_t(total), per = int64_t(kChunkBytes);
  if (gated != nullptr) {
    units = quant::PackedGroups(w[0]->ne[1]);
    per = std::max<int64_t>(1, int64_t(kGatedChunkBytes / (parts[0].p->group_bytes + parts[1].p->group_bytes)));
  }
  for (int32_t t = 0; t < nth; ++t) {
    const int64_t share = units * (t + 1) / nth - units * t / nth;
    decode_ranges_[size_t(t)].range.store(uint64_t((share + per - 1) / per) << 32, std::memory_order_relaxed);
  }
  using QuantizeRow = decltype(quantize_row);
  struct Ctx {
    const Part* parts;
    int32_t n, n_tok;
    int64_t k;
    size_t act_stride;
    const Activation* gated;
    int64_t units, per;  // as above; chunk j of thread t: units [lo_t + j per, min(hi_t, ...))
    ChunkRange* ranges;
    const QuantizeRow* quantize_row;
    ClaimedWork rows;  // batched rows to quantize (none for one token)
  } c{parts, n, n_tok, k, act_bytes, gated, units, per, decode_ranges_.get(), &quantize_row,
      ClaimedWork(n_tok > 1 ? n_tok : 0)};
  pool_->Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        c.rows.Work([&](int64_t t) { (*c.quantize_row)(t); });
        // Groups [g0, g1) of a part for the rows [t0, t0 + nt) (nt <= kMaxRows).
        const auto gemv = [&](const Part& part, int64_t g0, int64_t g1, int32_t t0, int32_t nt) {
          const int64_t m = part.w->ne[1];
          if (c.n_tok == 1) {
            quant::GemvPacked(part.w->type, c.k, part.p->data, g0, g1, m, part.act, part.y + g0 * quant::kPackRows);
            return;
          }
          const void* a[kMaxRows];
          float* ys[kMaxRows];
          for (int32_t i = 0; i < nt; ++i) {
            a[i] = part.act + size_t(t0 + i) * c.act_stride;
            ys[i] = part.y + int64_t{t0 + i} * m + g0 * quant::kPackRows;
          }
          quant::GemvPackedMulti(part.w->type, c.k, part.p->data, g0, g1, m, a, ys, nt);
        };
        const auto run_chunk = [&](int32_t t, uint32_t j) {
          const int64_t hi = c.units * (t + 1) / nth;
          const int64_t u0 = c.units * t / nth + int64_t(j) * c.per, u1 = std::min(hi, u0 + c.per);
          for (int32_t t0 = 0; t0 < c.n_tok; t0 += kMaxRows) {
            const int32_t nt = c.n_tok - t0 < kMaxRows ? c.n_tok - t0 : kMaxRows;  // no odr-use (no capture)
            if (c.gated != nullptr) {
              // The same row range of gate and up, then the activation on it while the slice's
              // outputs are in L2 (after all 512 rows they were not: SiluMul took 2.5x as long).
              gemv(c.parts[0], u0, u1, t0, nt);
              gemv(c.parts[1], u0, u1, t0, nt);
              const int64_t m = c.parts[0].w->ne[1];
              const int64_t r0 = u0 * quant::kPackRows, r1 = std::min(m, u1 * quant::kPackRows);
              for (int32_t tok = t0; tok < t0 + nt; ++tok) {
                ApplyGated(*c.gated, c.parts[0].y + int64_t{tok} * m + r0, c.parts[1].y + int64_t{tok} * m + r0, r1 - r0);
              }
              continue;
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
              if (g0 < g1) gemv(part, g0, g1, t0, nt);
              off += part.bytes;
            }
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

// The one place that decides how a product runs. Several weights sharing one input (Q/K/V,
// gate/up): the tile-packed prefill GEMM when each has one, the packed decode GEMV with the
// work split by bytes across all of them for one token, else each on its own. One weight: the
// tile-packed GEMM, the Q8_0 GEMM for other quantized types (prefill), the GEMV over its packed
// copy, or row by row over the file's blocks.
//
// Batched decode (invariant_): several rows are chosen for as one token is, and those paths
// (packed GEMV, row-at-a-time GEMV) compute each row the same way whatever the row count.
CpuBackend::MatMulPath CpuBackend::ChoosePath(const Tensor* const* w, int32_t n, int32_t n_tok) const {
  if (invariant_) n_tok = 1;
  bool gemm_packed = n <= 4;
  for (int32_t i = 0; i < n && gemm_packed; ++i) gemm_packed = UsePacked(*w[i], n_tok) && w[i]->ne[0] == w[0]->ne[0];
  if (gemm_packed) return MatMulPath::kGemmPacked;
  if (n > 1) {
    bool decode = n_tok == 1 && n <= 4 && packed_ != nullptr;
    for (int32_t i = 0; i < n && decode; ++i) decode = packed_->Find(*w[i]) != nullptr && w[i]->ne[0] == w[0]->ne[0];
    return decode ? MatMulPath::kDecodePacked : MatMulPath::kEach;
  }
  const Tensor& t = *w[0];
  if (n_tok >= kGemmMinTokens && t.ne[0] % 32 == 0 && t.type != GgmlType::F32 && t.type != GgmlType::F16 &&
      t.type != GgmlType::BF16) {
    return MatMulPath::kGemmQ8;
  }
  return packed_ != nullptr && packed_->Find(t) != nullptr ? MatMulPath::kGemvPacked : MatMulPath::kGemvRows;
}

void CpuBackend::MatMul(const Tensor& w, const float* x, int32_t n_tok, float* y) {
  const int64_t k = w.ne[0];
  const Tensor* ws[1] = {&w};
  const MatMulPath path = ChoosePath(ws, 1, n_tok);
  if (path == MatMulPath::kGemmPacked) {
    float* ys[1] = {y};
    MatMulPacked(ws, ys, 1, x, n_tok);
    return;
  }
  if (path == MatMulPath::kGemmQ8) {
    MatMulQ8Gemm(w, x, n_tok, y);
    return;
  }
  // Several rows over a packed copy (exact prefill, batched decode) take DecodePacked's 64-row
  // slices per chunk of weights: one pass of all rows per 16-row group re-read the batch's
  // activations (512 Q8_K rows: 0.9-1.8 MB) from L3 for every group. Each row's outputs are
  // computed as before (Granite 1B-class exact pp512: +10%, median of 4 alternations under load).
  // One token stays on the even split below (its byte chunks measured no better here).
  if (path == MatMulPath::kGemvPacked && n_tok > 1) {
    float* ys[1] = {y};
    if (DecodePacked(ws, ys, 1, x, n_tok, nullptr)) return;
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
    pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) quant::QuantizeActivations(act_type, x + t * k, act + size_t(t) * act_row, k);
    });
  }
  if (path == MatMulPath::kGemvPacked) {
    // Row-interleaved copy (quant/packed.h): 16-row groups split across threads.
    const PackedWeights::Matrix* p = packed_->Find(w);
    if (n_tok > 1) {  // rows DecodePacked declined: each group read once for every row
      std::vector<const void*> a(static_cast<size_t>(n_tok));
      for (int32_t t = 0; t < n_tok; ++t) a[size_t(t)] = act + size_t(t) * act_row;
      pool_->ParallelFor(quant::PackedGroups(m), [&](int64_t b, int64_t e) {
        std::vector<float*> ys(static_cast<size_t>(n_tok));
        for (int32_t t = 0; t < n_tok; ++t) ys[size_t(t)] = y + int64_t{t} * m + b * quant::kPackRows;
        quant::GemvPackedMulti(w.type, k, p->data, b, e, m, a.data(), ys.data(), n_tok);
      });
      return;
    }
    pool_->ParallelFor(quant::PackedGroups(m), [&](int64_t b, int64_t e) {
      quant::GemvPacked(w.type, k, p->data, b, e, m, act, y + b * quant::kPackRows);
    });
    return;
  }
  // Rows split across threads; several rows per kernel pass for each (few) token(s).
  pool_->ParallelFor(m, [&](int64_t b, int64_t e) {
    for (int32_t t = 0; t < n_tok; ++t) {
      quant::Gemv(w.type, k, w.data + size_t(b) * w_row, w_row, e - b, act + size_t(t) * act_row, y + int64_t{t} * m + b);
    }
  });
}

}  // namespace zf::engine
