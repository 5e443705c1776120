// CPU attention: grouped decode over the F16 cache, blocked flash-style prefill, and the per-row
// path for the rest (attention_kernels.h has the SIMD kernels; cpu_kv_cache.cpp the cache).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/switches.h"
#include "engine/cpu/attention_kernels.h"
#include "engine/cpu/attention_quant.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/kv_quant.h"
#include "engine/cpu/work_claim.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {

// The keys [*lo, *hi] a query at position p_q sees when the step's last position is last_pos:
// the sliding window behind it (causal) or around it (non-causal, symmetric: window / 2 either
// side, as the reference masks EmbeddingGemma), up to itself or to the step's end.
void VisibleKeys(const AttentionParams& ap, int32_t p_q, int32_t last_pos, int32_t* lo, int32_t* hi) {
  if (ap.causal) {
    *lo = ap.window > 0 ? std::max(0, p_q - ap.window + 1) : 0;
    *hi = ap.bidirectional_step ? last_pos : p_q;
  } else if (ap.window > 0) {
    *lo = std::max(0, p_q - ap.window / 2);
    *hi = std::min(last_pos, p_q + ap.window / 2);
  } else {
    *lo = 0;
    *hi = last_pos;
  }
}

// The ggml type of a cache's rows, and the bytes of `n` elements of it.
GgmlType RowType(KvType t) {
  switch (t) {
    case KvType::kF16: return GgmlType::F16;
    case KvType::kQ8_0: return GgmlType::Q8_0;
    case KvType::kQ4_0: return GgmlType::Q4_0;
    case KvType::kF32: break;
  }
  return GgmlType::F32;
}
size_t RowBytes(GgmlType t, int64_t n) {
  switch (t) {
    case GgmlType::F16: return KvRowBytes(KvType::kF16, n);
    case GgmlType::Q8_0: return KvRowBytes(KvType::kQ8_0, n);
    case GgmlType::Q4_0: return KvRowBytes(KvType::kQ4_0, n);
    default: return KvRowBytes(KvType::kF32, n);
  }
}

// Which grouped decode kernel takes a cache's K/V types (the same answer on every path, so a
// (token, head) is computed the same way whichever path reaches it); kNone: the per-row path.
enum class Grouped { kNone, kF16, kQuant };
Grouped GroupedFor(const CpuKvCache& c) {
  static const bool fast = attn::HasFastBlock() && !env::NoBlockedAttention();
  if (c.k_type() == KvType::kF16 && c.v_type() == KvType::kF16) return fast ? Grouped::kF16 : Grouped::kNone;
  // Quantized pairs: a SIMD kernel or the grouped reference (aarch64), never the per-row path.
  if (attn::QuantDecodeTypes(c.k_type(), c.v_type()) && !env::NoBlockedAttention()) return Grouped::kQuant;
  return Grouped::kNone;
}

// A split decode's storage for one batch of heads: per KV block, kDecodeHeads partials and
// kDecodeHeads unnormalized output rows.
size_t SplitFloats(int32_t blocks, int32_t d_v) {
  return size_t(blocks) * size_t(attn::kDecodeHeads) * (2 + size_t(d_v));
}

// Q of heads [h, h + n_q) of one token as the group's kernel takes it, into qbuf: rounded to
// F16 values (F16 cache) or rotated and quantized to Q8_0 (quantized K). tmp: d_k floats.
void PrepareQ(Grouped gk, const float* q, int32_t h, int32_t n_q, int32_t dk, float* qbuf, float* tmp) {
  auto* q8 = reinterpret_cast<uint8_t*>(qbuf);
  for (int32_t i = 0; i < n_q; ++i) {
    const float* src = q + int64_t{h + i} * dk;
    if (gk == Grouped::kF16) {  // as the reference multiplies it with the F16 cache
      quant::QuantizeActivations(GgmlType::F16, src, tmp, dk);
      quant::DequantizeRow(GgmlType::F16, tmp, qbuf + size_t(i) * size_t(dk), dk);
    } else {  // rotated as the K rows were (kv_quant.h)
      std::copy(src, src + dk, tmp);
      kvq::Rotate32(tmp, dk);
      quant::QuantizeActivations(GgmlType::Q8_0, tmp, q8 + size_t(i) * KvRowBytes(KvType::kQ8_0, dk), dk);
    }
  }
}

// Keys [k0, k0 + n) of KV group g for a batch of n_q heads prepared by PrepareQ.
void RunBatch(Grouped gk, const CpuKvCache& cache, int32_t layer, const AttentionParams& ap, int32_t g,
              const float* qbuf, int32_t n_q, int32_t k0, int32_t n, float* scores, float* const* outp,
              const float* sink, attn::Partial* part) {
  const int32_t dk = ap.head_dim_k, dv = ap.head_dim_v;
  if (gk == Grouped::kF16) {
    attn::DecodeGroup dg;
    dg.q = qbuf;
    dg.n_q = n_q;
    dg.d_k = dk;
    dg.d_v = dv;
    dg.k = reinterpret_cast<const uint16_t*>(cache.Row(false, layer, k0)) + int64_t{g} * dk;
    dg.k_stride = cache.k_width();
    dg.v = reinterpret_cast<const uint16_t*>(cache.Row(true, layer, k0)) + int64_t{g} * dv;
    dg.v_stride = cache.v_width();
    dg.n_keys = n;
    dg.scale = ap.scale;
    dg.softcap = ap.softcap;
    dg.s = scores;
    dg.out = outp;
    dg.sink = sink;
    dg.part = part;
    attn::RunDecode(dg);
    return;
  }
  attn::QuantDecodeGroup qg;
  qg.q8 = reinterpret_cast<const uint8_t*>(qbuf);
  qg.n_q = n_q;
  qg.d_k = dk;
  qg.d_v = dv;
  qg.kt = cache.k_type();
  qg.vt = cache.v_type();
  qg.k = cache.Row(false, layer, k0) + KvRowBytes(cache.k_type(), int64_t{g} * dk);
  qg.k_stride = int64_t(cache.RowBytes(false));
  qg.v = cache.Row(true, layer, k0) + KvRowBytes(cache.v_type(), int64_t{g} * dv);
  qg.v_stride = int64_t(cache.RowBytes(true));
  qg.n_keys = n;
  qg.scale = ap.scale;
  qg.softcap = ap.softcap;
  qg.s = scores;
  qg.out = outp;
  qg.sink = sink;
  qg.part = part;
  attn::RunQuantDecode(qg);
}

// KV block c (of attn::SplitBlocks(n_keys), keys from lo) of a batch into its split storage
// (SplitFloats: partials, then output rows).
void RunSplitBlock(Grouped gk, const CpuKvCache& cache, int32_t layer, const AttentionParams& ap, int32_t g,
                   const float* qbuf, int32_t n_q, int32_t lo, int32_t n_keys, int32_t c, float* scores, float* split) {
  const int32_t blocks = attn::SplitBlocks(n_keys), dv = ap.head_dim_v;
  auto* part = reinterpret_cast<attn::Partial*>(split) + size_t(c) * attn::kDecodeHeads;
  float* rows = split + size_t(blocks) * attn::kDecodeHeads * 2 + size_t(c) * attn::kDecodeHeads * size_t(dv);
  float* outp[attn::kDecodeHeads];
  for (int32_t i = 0; i < n_q; ++i) outp[i] = rows + size_t(i) * size_t(dv);
  const int32_t k0 = c * attn::kSplitKeys;
  RunBatch(gk, cache, layer, ap, g, qbuf, n_q, lo + k0, std::min(attn::kSplitKeys, n_keys - k0), scores, outp, nullptr,
           part);
}

// Head i of a batch from its split storage: the blocks folded in order (and a rotated V's sum
// rotated back).
void CombineSplit(const CpuKvCache& cache, const AttentionParams& ap, int32_t n_keys, const float* split, int32_t i,
                  int32_t h, float* out) {
  const int32_t blocks = attn::SplitBlocks(n_keys), dv = ap.head_dim_v;
  const auto* part = reinterpret_cast<const attn::Partial*>(split) + i;
  const float* rows = split + size_t(blocks) * attn::kDecodeHeads * 2 + size_t(i) * size_t(dv);
  attn::CombinePartials(part, attn::kDecodeHeads, rows, int64_t{attn::kDecodeHeads} * dv, blocks, dv,
                        ap.sinks != nullptr ? ap.sinks[h] : -INFINITY, out);
  if (kvq::Rotated(cache.v_type())) kvq::Rotate32(out, dv);
}

// The keys a decode-kernel row at position p sees: from *lo (its window's start), *n_keys of them
// (up to itself, or to `last` in a bidirectional step; last -1 otherwise).
void RowKeys(const AttentionParams& ap, int32_t p, int32_t last, int32_t* lo, int32_t* n_keys) {
  *lo = ap.window > 0 ? std::max(0, p - ap.window + 1) : 0;
  *n_keys = std::max(last, p) - *lo + 1;
}

// Exact prefill's tile: up to kExactTileRows query rows of one prompt, so that a KV block read
// from memory serves all of them from L2 (per row, at 32k keys, the whole layer's K/V streamed
// again otherwise).
constexpr int32_t kExactTileRows = 8;
// The tiles of a call are taken a KV head at a time (all of head 0's tiles, then head 1's...),
// so the head's K/V stays in the L3 from one tile to the next: in token order, consecutive
// tiles cycled through every head's K/V (at 16k keys of a Qwen3-1.7B-shaped layer, 128 MiB
// staged in F32) and each tile streamed it from memory again. The order changes no bits (each
// tile writes its own rows).
// Exact prefill goes in exact tiles (AttentionExactTiles) from this many tokens: staging the
// layer's K/V costs about one pass over them, which a few rows do not repay.
constexpr int32_t kExactTileMinTokens = 8;
// ... and for heads of at most this size, the largest measured (Gemma 3): a K panel (16 keys x
// the head) then takes at most 16 KiB of L1. (With K^T in rows of all keys instead of panels,
// a panel's 256 lines spread over 132 pages and Gemma's scores ran slower than per row.)
constexpr int32_t kExactTileMaxHead = 256;

// One row of a tile that goes split by KV blocks: its first key, key count and block count
// (as DecodeHeads computes them), and the token's query and output rows.
struct TileRow {
  int32_t lo, n_keys, blocks;
  const float* q;  // the token's Q row (all heads)
  float* out;      // the token's output row (all heads)
};

// Per-row storage of a tile (floats): the group's Q prepared per batch of heads, then per batch
// a split decode's storage.
size_t TileRowFloats(int32_t group, int32_t dk, int32_t dv, int32_t max_blocks) {
  const int32_t batches = (group + attn::kDecodeHeads - 1) / attn::kDecodeHeads;
  return size_t(batches) * (size_t(attn::kDecodeHeads) * size_t(dk) + SplitFloats(max_blocks, dv));
}

// KV group g of the tile's split rows: per KV block (outside), per row, per batch of at most
// kDecodeHeads heads (inside), exactly the RunSplitBlock calls DecodeHeads makes for that row
// and batch (the same keys, Q and storage layout; each call a pure function of its arguments),
// then each head's blocks folded in order (CombineSplit): the bits of the per-row path, with the
// block's K/V loaded once per tile. scratch: dk floats, then kDecodeHeads * kSplitKeys scores;
// store: n * TileRowFloats floats.
void RunTileGroup(Grouped gk, const CpuKvCache& cache, int32_t layer, const AttentionParams& ap, int32_t g,
                  const TileRow* rows, int32_t n, int32_t max_blocks, float* scratch, float* store) {
  const int32_t group = ap.n_head / ap.n_head_kv, dk = ap.head_dim_k, dv = ap.head_dim_v;
  const int32_t batches = (group + attn::kDecodeHeads - 1) / attn::kDecodeHeads;
  const size_t row_floats = TileRowFloats(group, dk, dv, max_blocks);
  const size_t split_floats = SplitFloats(max_blocks, dv);
  float* tmp = scratch;
  float* scores = tmp + size_t(dk);
  // Batch b of row i: its Q (kDecodeHeads * dk floats) and its split storage.
  const auto qbuf = [&](int32_t i, int32_t b) { return store + size_t(i) * row_floats + size_t(b) * size_t(attn::kDecodeHeads) * size_t(dk); };
  const auto split = [&](int32_t i, int32_t b) {
    return store + size_t(i) * row_floats + size_t(batches) * size_t(attn::kDecodeHeads) * size_t(dk) +
           size_t(b) * split_floats;
  };
  const auto heads = [&](int32_t b, int32_t* h, int32_t* n_q) {
    *h = g * group + b * attn::kDecodeHeads;
    *n_q = std::min(attn::kDecodeHeads, (g + 1) * group - *h);
  };
  int32_t blocks = 0;
  for (int32_t i = 0; i < n; ++i) {
    blocks = std::max(blocks, rows[i].blocks);
    for (int32_t b = 0; b < batches; ++b) {
      int32_t h = 0, n_q = 0;
      heads(b, &h, &n_q);
      PrepareQ(gk, rows[i].q, h, n_q, dk, qbuf(i, b), tmp);
    }
  }
  for (int32_t c = 0; c < blocks; ++c) {
    for (int32_t i = 0; i < n; ++i) {
      if (c >= rows[i].blocks) continue;
      for (int32_t b = 0; b < batches; ++b) {
        int32_t h = 0, n_q = 0;
        heads(b, &h, &n_q);
        RunSplitBlock(gk, cache, layer, ap, g, qbuf(i, b), n_q, rows[i].lo, rows[i].n_keys, c, scores, split(i, b));
      }
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t b = 0; b < batches; ++b) {
      int32_t h = 0, n_q = 0;
      heads(b, &h, &n_q);
      for (int32_t k = 0; k < n_q; ++k) {
        CombineSplit(cache, ap, rows[i].n_keys, split(i, b), k, h + k, rows[i].out + int64_t{h + k} * dv);
      }
    }
  }
}

// Prefill's staging of one layer's K/V (the blocked and the exact-tile paths): chunk c of
// kStageRows positions of K goes transposed into kt and, with an F16 cache, V into vf as F32
// rows. Element i of a K row is head i / head_dim_k, dimension i % head_dim_k; kt holds it at
// i * kt_stride + position (rows of all positions; chunk n_chunks zeroes the keys from n_pos to
// kt_stride, read by the key tiles) or, with `panels`, at c * k_width * 16 + i * 16 + position
// % 16 (each chunk a contiguous panel, zero past n_pos). tmp: kStageRows * k_width floats.
constexpr int32_t kStageRows = 16;  // K rows converted per step before the transposing scatter
void StageChunk(const CpuKvCache& cache, int32_t layer, int32_t n_pos, int64_t c, float* kt, int64_t kt_stride,
                float* vf, float* tmp, bool panels = false) {
  const bool f16 = cache.k_type() == KvType::kF16;  // (else F32/F32)
  const int32_t kw = cache.k_width(), vw = cache.v_width();
  const uint8_t* kdata = cache.Row(false, layer, 0);
  const uint8_t* vdata = cache.Row(true, layer, 0);
  if (c == (n_pos + kStageRows - 1) / kStageRows) {
    for (int32_t i = 0; i < kw; ++i) {
      std::fill(kt + size_t(i) * size_t(kt_stride) + size_t(n_pos), kt + size_t(i + 1) * size_t(kt_stride), 0.0f);
    }
    return;
  }
  const int32_t p0 = int32_t(c * kStageRows), n = std::min(kStageRows, n_pos - p0);
  if (f16) {
    quant::DequantizeRow(GgmlType::F16, kdata + size_t(p0) * size_t(kw) * 2, tmp, int64_t{n} * kw);
    quant::DequantizeRow(GgmlType::F16, vdata + size_t(p0) * size_t(vw) * 2, vf + size_t(p0) * size_t(vw),
                         int64_t{n} * vw);
  } else {
    std::memcpy(tmp, kdata + size_t(p0) * size_t(kw) * 4, size_t(n) * size_t(kw) * 4);
  }
  for (int32_t i = 0; i < kw; ++i) {
    float* dst = panels ? kt + (size_t(c) * size_t(kw) + size_t(i)) * kStageRows : kt + size_t(i) * size_t(kt_stride) + size_t(p0);
    for (int32_t r = 0; r < n; ++r) dst[r] = tmp[size_t(r) * size_t(kw) + size_t(i)];
    if (panels) std::fill(dst + n, dst + kStageRows, 0.0f);
  }
}

}  // namespace

static_assert(sizeof(attn::Partial) == 2 * sizeof(float), "split storage counts a partial as 2 floats");

// Per thread: a V head in F32, Q in the cache type, and the scores of one context row.
// Decode (AttentionDecode) uses the same block: kDecodeHeads Q rows, one staging row,
// kDecodeHeads score rows (a head is at most k_width wide), and a split decode's storage.
size_t CpuBackend::AttnScratchPerThread(int32_t n_ctx, int32_t k_width, int32_t v_width) {
  const size_t per_row = size_t(v_width) + 2 * size_t(k_width) + size_t(n_ctx);
  const size_t decode = size_t(attn::kDecodeHeads) * (size_t(n_ctx) + size_t(k_width)) + size_t(k_width) +
                        SplitFloats(attn::SplitBlocks(n_ctx), v_width);
  return std::max(per_row, decode);
}

float* CpuBackend::AttnScratch(size_t per_thread) {
  const size_t need = size_t(pool_->size()) * per_thread;
  if (attn_scratch_.size() < need) attn_scratch_.resize(need);
  return attn_scratch_.data();
}

// Heads [h0, h1) of one query row at position pos0 over `cache`'s layer, a KV group (and at most
// kDecodeHeads) at a time; scratch: AttnScratchPerThread floats. A head's result does not depend
// on which heads share its call (each has its own accumulators), so any split of the heads
// across threads gives the same output. At long depth the keys go in KV blocks (SplitBlocks)
// folded in order, as AttentionDecode's threads compute them.
void CpuBackend::DecodeHeads(const CpuKvCache& cache, int32_t layer, const float* q, int32_t pos0,
                             const AttentionParams& ap, float* out, int32_t h0, int32_t h1, float* scratch,
                             int32_t last) {
  const Grouped gk = GroupedFor(cache);
  const int32_t group = ap.n_head / ap.n_head_kv, dk = ap.head_dim_k, dv = ap.head_dim_v;
  int32_t lo = 0, n_keys = 0;
  RowKeys(ap, pos0, last, &lo, &n_keys);
  const int32_t blocks = attn::SplitBlocks(n_keys);
  float* qs = scratch;
  float* tmp = qs + size_t(attn::kDecodeHeads) * size_t(dk);
  float* scores = tmp + size_t(dk);
  float* split = scores + size_t(attn::kDecodeHeads) * size_t(cache.n_ctx());
  for (int32_t h = h0; h < h1;) {
    const int32_t g = h / group;
    const int32_t n_q = std::min({h1 - h, (g + 1) * group - h, attn::kDecodeHeads});
    PrepareQ(gk, q, h, n_q, dk, qs, tmp);
    if (blocks > 1) {
      for (int32_t c = 0; c < blocks; ++c) RunSplitBlock(gk, cache, layer, ap, g, qs, n_q, lo, n_keys, c, scores, split);
      for (int32_t i = 0; i < n_q; ++i) CombineSplit(cache, ap, n_keys, split, i, h + i, out + int64_t{h + i} * dv);
    } else {
      float* outp[attn::kDecodeHeads];
      for (int32_t i = 0; i < n_q; ++i) outp[i] = out + int64_t{h + i} * dv;
      RunBatch(gk, cache, layer, ap, g, qs, n_q, lo, n_keys, scores, outp, ap.sinks != nullptr ? ap.sinks + h : nullptr,
               nullptr);
      if (kvq::Rotated(cache.v_type())) {  // a sum of rotated V rows, rotated back
        for (int32_t i = 0; i < n_q; ++i) kvq::Rotate32(outp[i], dv);
      }
    }
    h += n_q;
  }
}

void CpuBackend::AttentionDecode(const CpuKvCache& kv, int32_t layer, const float* q, int32_t pos0,
                                 const AttentionParams& ap, float* out) {
  const int32_t lo = ap.window > 0 ? std::max(0, pos0 - ap.window + 1) : 0, n_keys = pos0 - lo + 1;
  const int32_t blocks = attn::SplitBlocks(n_keys);
  const size_t per_thread = AttnScratchPerThread(kv.n_ctx(), kv.k_width(), kv.v_width());
  if (blocks == 1) {  // heads split across threads
    struct Ctx {
      const CpuKvCache* kv;
      float* scratch;
      size_t per_thread;
      const float* q;
      float* out;
      const AttentionParams* ap;
      int32_t layer, pos0;
    } c{&kv, AttnScratch(per_thread), per_thread, q, out, &ap, layer, pos0};
    pool_->Run(
        [](void* p, int32_t ith, int32_t nth) {
          Ctx& c = *static_cast<Ctx*>(p);
          const AttentionParams& ap = *c.ap;
          // This thread's heads [h0, h1).
          const int32_t h0 = int32_t(int64_t{ap.n_head} * ith / nth), h1 = int32_t(int64_t{ap.n_head} * (ith + 1) / nth);
          DecodeHeads(*c.kv, c.layer, c.q, c.pos0, ap, c.out, h0, h1, c.scratch + size_t(ith) * c.per_thread);
        },
        &c);
    return;
  }
  // Long depth: (batch of heads, KV block) items over all threads, then each head's blocks
  // folded in block order (CombineSplit), as DecodeHeads does on one thread: the same bits for
  // any thread count. A batch is at most kDecodeHeads heads of one KV group.
  const int32_t group = ap.n_head / ap.n_head_kv;
  const int32_t per_group = (group + attn::kDecodeHeads - 1) / attn::kDecodeHeads;
  const int32_t n_batches = ap.n_head_kv * per_group;
  const size_t batch_floats = SplitFloats(blocks, ap.head_dim_v);
  const size_t nth = size_t(pool_->size());
  const size_t shared = size_t(n_batches) * batch_floats;
  float* base = AttnScratch(per_thread + (shared + nth - 1) / nth);
  struct Ctx {
    const CpuKvCache* kv;
    float* scratch;  // per thread
    float* split;    // per batch
    size_t per_thread, batch_floats;
    const float* q;
    float* out;
    const AttentionParams* ap;
    Grouped gk;
    int32_t layer, lo, n_keys, blocks, group, per_group;
    ClaimedWork items;
  } c{&kv, base, base + nth * per_thread, per_thread, batch_floats, q, out, &ap, GroupedFor(kv), layer, lo, n_keys, blocks,
      group, per_group, ClaimedWork(int64_t{n_batches} * blocks)};
  pool_->Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        const AttentionParams& ap = *c.ap;
        float* qs = c.scratch + size_t(ith) * c.per_thread;
        float* tmp = qs + size_t(attn::kDecodeHeads) * size_t(ap.head_dim_k);
        float* scores = tmp + size_t(ap.head_dim_k);
        // The first head and the head count of batch b.
        const auto batch = [&](int32_t b, int32_t* h, int32_t* n_q) {
          const int32_t g = b / c.per_group;
          *h = g * c.group + (b % c.per_group) * attn::kDecodeHeads;
          *n_q = std::min(attn::kDecodeHeads, (g + 1) * c.group - *h);
        };
        c.items.Work([&](int64_t it) {
          const int32_t b = int32_t(it / c.blocks), blk = int32_t(it % c.blocks);
          int32_t h = 0, n_q = 0;
          batch(b, &h, &n_q);
          PrepareQ(c.gk, c.q, h, n_q, ap.head_dim_k, qs, tmp);
          RunSplitBlock(c.gk, *c.kv, c.layer, ap, h / c.group, qs, n_q, c.lo, c.n_keys, blk, scores,
                        c.split + size_t(b) * c.batch_floats);
        });
        // This thread's heads [h0, h1), folded.
        const int32_t h0 = int32_t(int64_t{ap.n_head} * ith / nth), h1 = int32_t(int64_t{ap.n_head} * (ith + 1) / nth);
        for (int32_t hh = h0; hh < h1; ++hh) {
          const int32_t g = hh / c.group, b = g * c.per_group + (hh % c.group) / attn::kDecodeHeads;
          CombineSplit(*c.kv, ap, c.n_keys, c.split + size_t(b) * c.batch_floats, (hh % c.group) % attn::kDecodeHeads, hh,
                       c.out + int64_t{hh} * ap.head_dim_v);
        }
      },
      &c);
}

// Batched decode: every (row, KV group) pair is one work item, taken from a counter by this
// backend's threads. Rows whose cache no grouped kernel takes (GroupedFor) go one after the
// other through Attention.
void CpuBackend::AttentionRows(int32_t layer, const DecodeRow* rows, int32_t n, const AttentionParams& ap) {
  int32_t max_ctx = 0, k_width = 0, v_width = 0;
  bool ok = true;
  for (int32_t i = 0; i < n && ok; ++i) {
    const CpuKvCache* c = CpuKvCache::Of(*rows[i].kv);
    ok = c != nullptr && GroupedFor(*c) != Grouped::kNone;
    if (ok) {
      max_ctx = std::max(max_ctx, c->n_ctx());
      k_width = std::max(k_width, c->k_width());
      v_width = std::max(v_width, c->v_width());
    }
  }
  if (!ok) {
    Backend::AttentionRows(layer, rows, n, ap);
    return;
  }
  const size_t per_thread = AttnScratchPerThread(max_ctx, k_width, v_width);
  struct Ctx {
    float* scratch;
    const DecodeRow* rows;
    const AttentionParams* ap;
    int32_t layer, groups;
    int64_t items;
    size_t per_thread;
    std::atomic<int64_t> next;
  } c{AttnScratch(per_thread), rows, &ap, layer, ap.n_head_kv, int64_t{n} * ap.n_head_kv, per_thread, {0}};
  pool_->Run(
      [](void* p, int32_t ith, int32_t) {
        Ctx& c = *static_cast<Ctx*>(p);
        const int32_t group = c.ap->n_head / c.ap->n_head_kv;
        float* scratch = c.scratch + size_t(ith) * c.per_thread;
        for (int64_t it = c.next.fetch_add(1, std::memory_order_relaxed); it < c.items;
             it = c.next.fetch_add(1, std::memory_order_relaxed)) {
          const DecodeRow& r = c.rows[it / c.groups];
          const int32_t g = int32_t(it % c.groups);
          DecodeHeads(*CpuKvCache::Of(*r.kv), c.layer, r.q, r.pos, *c.ap, r.out, g * group,
                      (g + 1) * group, scratch);
        }
      },
      &c);
}

// Prefill: per KV head, blocks of kAttnRows query rows ((token, head) pairs of that head's group)
// go through the blocked kernel. This layer's K is staged once transposed (head, dimension,
// position) in F32 and V as F32 rows. With an F16 cache, Q is rounded to F16 as the reference
// does (products and sums in F32).
void CpuBackend::AttentionBlocked(const CpuKvCache& cache, int32_t layer, const float* q, int32_t n_tok,
                                  int32_t pos0, const AttentionParams& ap, float* out) {
  const bool f16 = cache.k_type() == KvType::kF16;  // (the caller passes F16/F16 or F32/F32)
  const int32_t n_pos = pos0 + n_tok;
  const int32_t dk = ap.head_dim_k;
  const int64_t kt_stride = (int64_t{n_pos} + attn::kKeyPad + 15) / 16 * 16;
  const uint8_t* vdata = cache.Row(true, layer, 0);
  const int32_t k_width = cache.k_width(), v_width = cache.v_width(), n_ctx = cache.n_ctx();
  const size_t nth = size_t(pool_->size());
  const size_t per_thread = size_t(attn::kAttnRows) * size_t(dk) +
                            size_t(attn::kAttnRows) * size_t(attn::ScoreStride(n_pos)) +
                            size_t(kStageRows) * size_t(k_width);
  if (kt_stage_.size() < size_t(k_width) * size_t(kt_stride)) kt_stage_.resize(size_t(k_width) * size_t(kt_stride));
  if (attn_block_.size() < nth * per_thread) attn_block_.resize(nth * per_thread);
  float* kt = kt_stage_.data();
  const float* vf = reinterpret_cast<const float*>(vdata);
  if (f16) {
    if (kv_stage_.size() < size_t(n_pos) * size_t(v_width)) kv_stage_.resize(size_t(n_ctx) * size_t(v_width));
    vf = kv_stage_.data();
  }
  float* blk = attn_block_.data();
  const int32_t vw = v_width;
  // Phase 1, one item per chunk of kStageRows positions (the last item zeroes the padding keys),
  // claimed inside the same parallel region as the blocks (see ClaimedWork).
  const int64_t n_chunks = (n_pos + kStageRows - 1) / kStageRows;
  auto stage = [&](int32_t ith, int64_t c) {
    StageChunk(cache, layer, n_pos, c, kt, kt_stride, kv_stage_.data(),
               blk + size_t(ith) * per_thread + size_t(attn::kAttnRows) * size_t(dk) +
                   size_t(attn::kAttnRows) * size_t(attn::ScoreStride(n_pos)));
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
  pool_->Run(
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
        float sink[attn::kAttnRows];
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
            VisibleKeys(ap, p_q, c.n_pos - 1, &lo[i], &hi[i]);
            key0 = std::min(key0, lo[i]);
            key1 = std::max(key1, hi[i]);
            outp[i] = c.out + int64_t{t} * ap.n_head * dv + int64_t{h} * dv;
            if (ap.sinks != nullptr) sink[i] = ap.sinks[h];
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
          b.sink = ap.sinks != nullptr ? sink : nullptr;
          attn::RunBlock(b);
        }
      },
      &c);
}

// Exact prefill (SetBatchInvariant): each query row goes through the decode kernel over the
// keys up to its own position, so a position's output is the same whether its prompt arrived
// in one chunk, in several, or one token at a time. Items are (tile of rows, KV group) pairs;
// rows split by KV blocks (long depth) go through RunTileGroup, the key block outside and the
// tile's rows inside, the others one by one through DecodeHeads. With no split row in the call
// a tile is one row (the most items for the threads). Calls that go in exact tiles
// (AttentionExactTiles: AVX-512, F16 cache, kExactTileMinTokens or more, heads up to
// kExactTileMaxHead) take neither: split rows there run the tile kernel per KV block.
void CpuBackend::AttentionRowsExact(const CpuKvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                                    const AttentionParams& ap, float* out) {
  const int32_t last = ap.bidirectional_step ? pos0 + n_tok - 1 : -1;  // a bidirectional step's last key
  int32_t max_blocks = 1;
  for (int32_t t = 0; t < n_tok; ++t) {
    int32_t lo = 0, n_keys = 0;
    RowKeys(ap, pos0 + t, last, &lo, &n_keys);
    max_blocks = std::max(max_blocks, attn::SplitBlocks(n_keys));
  }
  if (n_tok >= kExactTileMinTokens && GroupedFor(kv) == Grouped::kF16 && attn::HasExactTile() &&
      ap.n_head / ap.n_head_kv <= attn::kExactRows && ap.head_dim_k % 16 == 0 && ap.head_dim_v % 16 == 0 &&
      std::max(ap.head_dim_k, ap.head_dim_v) <= kExactTileMaxHead) {
    AttentionExactTiles(kv, layer, q, n_tok, pos0, ap, out, max_blocks);
    return;
  }
  const int32_t tile = max_blocks > 1 ? kExactTileRows : 1;
  const int32_t group = ap.n_head / ap.n_head_kv;
  const size_t per_row = AttnScratchPerThread(kv.n_ctx(), kv.k_width(), kv.v_width());
  const size_t tile_floats = tile > 1 ? size_t(tile) * TileRowFloats(group, ap.head_dim_k, ap.head_dim_v, max_blocks) : 0;
  struct Ctx {
    const CpuKvCache* kv;
    float* scratch;
    size_t per_row, per_thread;
    const float* q;
    float* out;
    const AttentionParams* ap;
    Grouped gk;
    int32_t layer, pos0, last, n_tok, tile, max_blocks;
    int64_t items;
    std::atomic<int64_t> next;
  } c{&kv, nullptr, per_row, per_row + tile_floats, q, out, &ap, GroupedFor(kv), layer, pos0, last, n_tok, tile,
      max_blocks, int64_t{(n_tok + tile - 1) / tile} * ap.n_head_kv, {0}};
  c.scratch = AttnScratch(c.per_thread);
  pool_->Run(
      [](void* p, int32_t ith, int32_t) {
        Ctx& c = *static_cast<Ctx*>(p);
        const AttentionParams& ap = *c.ap;
        const int32_t group = ap.n_head / ap.n_head_kv;
        float* scratch = c.scratch + size_t(ith) * c.per_thread;
        TileRow split[kExactTileRows];
        // The costliest items (last rows: the most keys) first.
        for (int64_t taken = c.next.fetch_add(1, std::memory_order_relaxed); taken < c.items;
             taken = c.next.fetch_add(1, std::memory_order_relaxed)) {
          const int64_t it = c.items - 1 - taken;
          const int64_t n_tiles = c.items / ap.n_head_kv;  // a KV head at a time (see kExactTileRows)
          const int32_t t0 = int32_t(it % n_tiles) * c.tile, g = int32_t(it / n_tiles);
          const int32_t t1 = std::min(c.n_tok, t0 + c.tile);
          int32_t n_split = 0;
          for (int32_t t = t0; t < t1; ++t) {
            const float* qt = c.q + int64_t{t} * ap.n_head * ap.head_dim_k;
            float* ot = c.out + int64_t{t} * ap.n_head * ap.head_dim_v;
            int32_t lo = 0, n_keys = 0;
            RowKeys(ap, c.pos0 + t, c.last, &lo, &n_keys);
            if (c.tile > 1 && attn::SplitBlocks(n_keys) > 1) {
              split[n_split++] = TileRow{lo, n_keys, attn::SplitBlocks(n_keys), qt, ot};
            } else {
              DecodeHeads(*c.kv, c.layer, qt, c.pos0 + t, ap, ot, g * group, (g + 1) * group, scratch, c.last);
            }
          }
          if (n_split > 0) {
            RunTileGroup(c.gk, *c.kv, c.layer, ap, g, split, n_split, c.max_blocks, scratch, scratch + c.per_row);
          }
        }
      },
      &c);
}

// Exact prefill in tiles (attention_kernels.h, ExactTile): the layer's K is staged in 16-key
// panels and V as F32 rows (as AttentionBlocked does), then each item, the rows (token, head) of
// a few consecutive tokens and one KV group, goes through the exact tile kernel: the bits of
// DecodeHeads for every row, with the K and V loads shared by the tile's rows. Rows split by KV
// blocks (long depth) take one partial tile call per block (the block outside, the rows
// inside: each row's keys in that block, as RunSplitBlock's decode call), folded per head in
// block order by CombinePartials as CombineSplit does.
void CpuBackend::AttentionExactTiles(const CpuKvCache& cache, int32_t layer, const float* q, int32_t n_tok,
                                     int32_t pos0, const AttentionParams& ap, float* out, int32_t max_blocks) {
  const int32_t n_pos = pos0 + n_tok, group = ap.n_head / ap.n_head_kv, dk = ap.head_dim_k, dv = ap.head_dim_v;
  const int32_t k_width = cache.k_width(), v_width = cache.v_width();
  const int64_t n_panels = (int64_t{n_pos} + kStageRows - 1) / kStageRows;
  const int64_t ss = n_panels * kStageRows;
  // Tokens per item: as many as kExactRows takes, in whole groups of 4 rows where that is
  // possible (a group of fewer rows shares each K^T load among fewer FMAs).
  int32_t tile = attn::kExactRows / group;
  while (tile > 1 && tile * group % 4 != 0) --tile;
  if (tile * group % 4 != 0) tile = attn::kExactRows / group;
  // Per thread: Q, scores, the staging rows, and with split rows their blocks' partials and
  // unnormalized outputs ([block][row], as CombinePartials reads them).
  const size_t split_floats = max_blocks > 1 ? size_t(max_blocks) * size_t(attn::kExactRows) * (2 + size_t(dv)) : 0;
  const size_t per_thread = size_t(attn::kExactRows) * (size_t(dk) + size_t(ss)) + size_t(kStageRows) * size_t(k_width) +
                            split_floats;
  const size_t nth = size_t(pool_->size());
  if (kt_stage_.size() < size_t(k_width) * size_t(ss)) kt_stage_.resize(size_t(k_width) * size_t(ss));
  if (kv_stage_.size() < size_t(n_pos) * size_t(v_width)) kv_stage_.resize(size_t(cache.n_ctx()) * size_t(v_width));
  if (attn_block_.size() < nth * per_thread) attn_block_.resize(nth * per_thread);
  struct Ctx {
    const CpuKvCache* cache;
    const float* q;
    float* out;
    const AttentionParams* ap;
    float* kt;
    float* vf;
    float* blk;
    size_t per_thread;
    int64_t ss;
    int32_t layer, n_tok, pos0, n_pos, last, tile, max_blocks;
    ClaimedWork phase1;         // staging: one K panel (and its V rows) per item
    std::atomic<int64_t> next;  // the next item to take
  } c{&cache, q, out, &ap, kt_stage_.data(), kv_stage_.data(), attn_block_.data(), per_thread, ss, layer,
      n_tok, pos0, n_pos, ap.bidirectional_step ? n_pos - 1 : -1, tile, max_blocks, ClaimedWork(n_panels), {0}};
  pool_->Run(
      [](void* p, int32_t ith, int32_t) {
        Ctx& c = *static_cast<Ctx*>(p);
        const AttentionParams& ap = *c.ap;
        const int32_t group = ap.n_head / ap.n_head_kv, dk = ap.head_dim_k, dv = ap.head_dim_v;
        float* qb = c.blk + size_t(ith) * c.per_thread;
        float* sb = qb + size_t(attn::kExactRows) * size_t(dk);
        float* tmp = sb + size_t(attn::kExactRows) * size_t(c.ss);
        auto* parts = reinterpret_cast<attn::Partial*>(tmp + size_t(kStageRows) * size_t(c.cache->k_width()));
        float* pouts = reinterpret_cast<float*>(parts + size_t(c.max_blocks) * attn::kExactRows);
        c.phase1.Work([&](int64_t i) { StageChunk(*c.cache, c.layer, c.n_pos, i, c.kt, 0, c.vf, tmp, true); });
        int32_t lo[attn::kExactRows], hi[attn::kExactRows], n_keys[attn::kExactRows], blocks[attn::kExactRows];
        int32_t head[attn::kExactRows];
        float sink[attn::kExactRows];
        float* outp[attn::kExactRows];
        int32_t order[attn::kExactRows];  // the item's tokens by block count (stable)
        attn::ExactTile et;
        et.d_k = dk;
        et.d_v = dv;
        et.kt_stride = int64_t{c.cache->k_width()} * kStageRows;
        et.v_stride = c.cache->v_width();
        et.scale = ap.scale;
        et.softcap = ap.softcap;
        et.s = sb;
        // The costliest items (last rows: the most keys) first, a KV head at a time (see kExactTileRows).
        const int64_t n_tiles = (c.n_tok + c.tile - 1) / c.tile, items = n_tiles * ap.n_head_kv;
        for (int64_t taken = c.next.fetch_add(1, std::memory_order_relaxed); taken < items;
             taken = c.next.fetch_add(1, std::memory_order_relaxed)) {
          const int64_t it = items - 1 - taken;
          const int32_t t0 = int32_t(it % n_tiles) * c.tile, g = int32_t(it / n_tiles);
          const int32_t n_t = std::min(c.n_tok, t0 + c.tile) - t0;
          int32_t tok_blocks[attn::kExactRows];
          for (int32_t i = 0; i < n_t; ++i) {
            int32_t first = 0, n = 0;
            RowKeys(ap, c.pos0 + t0 + i, c.last, &first, &n);
            tok_blocks[i] = attn::SplitBlocks(n);
            int32_t k = i;  // insertion: tokens of fewer blocks first, so each block's rows are a suffix
            for (; k > 0 && tok_blocks[order[k - 1]] > tok_blocks[i]; --k) order[k] = order[k - 1];
            order[k] = i;
          }
          int32_t rows = 0, n_whole = 0;  // rows [0, n_whole): one softmax over all their keys
          for (int32_t k = 0; k < n_t; ++k) {
            const int32_t t = t0 + order[k];
            int32_t first = 0, n = 0;
            RowKeys(ap, c.pos0 + t, c.last, &first, &n);
            PrepareQ(Grouped::kF16, c.q + int64_t{t} * ap.n_head * dk, g * group, group, dk, qb + size_t(rows) * size_t(dk),
                     tmp);
            for (int32_t h = g * group; h < (g + 1) * group; ++h, ++rows) {
              lo[rows] = first;
              hi[rows] = first + n - 1;
              n_keys[rows] = n;
              blocks[rows] = attn::SplitBlocks(n);
              head[rows] = h;
              outp[rows] = c.out + (int64_t{t} * ap.n_head + h) * dv;
              if (ap.sinks != nullptr) sink[rows] = ap.sinks[h];
              if (blocks[rows] == 1) n_whole = rows + 1;
            }
          }
          et.kt = c.kt + size_t(g) * size_t(dk) * kStageRows;  // this KV head's rows of each panel
          et.v = c.vf + size_t(g) * size_t(dv);
          if (n_whole > 0) {
            et.q = qb;
            et.rows = n_whole;
            et.lo = lo;
            et.hi = hi;
            et.ss = c.ss;
            et.out = outp;
            et.sink = ap.sinks != nullptr ? sink : nullptr;
            et.part = nullptr;
            attn::RunExactTile(et);
          }
          if (n_whole == rows) continue;
          // The split rows [n_whole, rows), block b of each: its keys from lo + b * kSplitKeys.
          int32_t blo[attn::kExactRows], bhi[attn::kExactRows];
          float* bout[attn::kExactRows];
          for (int32_t b = 0, r0 = n_whole; b < blocks[rows - 1]; ++b) {
            while (blocks[r0] <= b) ++r0;  // the rows with a block b (a suffix)
            int32_t first = INT32_MAX, top = 0;
            for (int32_t r = r0; r < rows; ++r) {
              const int32_t k0 = b * attn::kSplitKeys;
              blo[r - r0] = lo[r] + k0;
              bhi[r - r0] = lo[r] + std::min(n_keys[r], k0 + attn::kSplitKeys) - 1;
              bout[r - r0] = pouts + (size_t(b) * attn::kExactRows + size_t(r - n_whole)) * size_t(dv);
              first = std::min(first, blo[r - r0]);
              top = std::max(top, bhi[r - r0]);
            }
            et.q = qb + size_t(r0) * size_t(dk);
            et.rows = rows - r0;
            et.lo = blo;
            et.hi = bhi;
            et.ss = (top - (first & ~15) + 16) & ~15;  // the block's scores only
            et.out = bout;
            et.sink = nullptr;
            et.part = parts + size_t(b) * attn::kExactRows + size_t(r0 - n_whole);
            attn::RunExactTile(et);
          }
          for (int32_t r = n_whole; r < rows; ++r) {
            attn::CombinePartials(parts + (r - n_whole), attn::kExactRows, pouts + size_t(r - n_whole) * size_t(dv),
                                  int64_t{attn::kExactRows} * dv, blocks[r], dv,
                                  ap.sinks != nullptr ? ap.sinks[head[r]] : -INFINITY, outp[r]);
          }
        }
      },
      &c);
}

void CpuBackend::StoreKv(KvCache& kv, int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) {
  CpuKvCache::Of(kv)->Store(layer, k, v, n_tok, pos0);
}

void CpuBackend::Attention(const KvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                           const AttentionParams& ap, float* out) {
  static const bool blocked_ok = attn::HasFastBlock() && !env::NoBlockedAttention();
  const CpuKvCache& cache = *CpuKvCache::Of(kv);
  const bool f16 = cache.k_type() == KvType::kF16 && cache.v_type() == KvType::kF16;
  const bool f32 = cache.k_type() == KvType::kF32 && cache.v_type() == KvType::kF32;
  // Quantized K/V go through the grouped kernel one (token, KV group) at a time for prefill and
  // decode alike (the other mixed pairs through the per-row path below): each (token, head) is
  // the same computation however the prompt is split, so it is exact.
  if (GroupedFor(cache) == Grouped::kQuant) {
    if (n_tok == 1) {
      AttentionDecode(cache, layer, q, pos0, ap, out);
    } else {
      AttentionRowsExact(cache, layer, q, n_tok, pos0, ap, out);
    }
    return;
  }
  if (n_tok > 1 && blocked_ok && invariant_ && f16) {
    AttentionRowsExact(cache, layer, q, n_tok, pos0, ap, out);
    return;
  }
  // The blocked kernel sums in another order than one token at a time: fast prefill only. Exact
  // prefill with an F32 cache takes the per-row path below, the one a decode step takes.
  if (n_tok > 1 && blocked_ok && (f16 || (f32 && !invariant_))) {
    AttentionBlocked(cache, layer, q, n_tok, pos0, ap, out);
    return;
  }
  if (n_tok == 1 && blocked_ok && f16) {  // HasFastDecode() == HasFastBlock()
    AttentionDecode(cache, layer, q, pos0, ap, out);
    return;
  }
  const int32_t group = ap.n_head / ap.n_head_kv;
  const int32_t q_width = ap.n_head * ap.head_dim_k;
  const int32_t o_width = ap.n_head * ap.head_dim_v;
  const int32_t k_width = cache.k_width(), v_width = cache.v_width(), n_ctx = cache.n_ctx();
  const size_t per_thread = AttnScratchPerThread(n_ctx, k_width, v_width);
  float* scratch = AttnScratch(per_thread);
  // Prefill with an F16 cache: this layer's K/V rows are converted to F32 once (in parallel)
  // and shared by every query, instead of converting them again for each (token, head).
  const bool staged = f16 && n_tok > 1;
  const uint8_t* kdata = cache.Row(false, layer, 0);
  const uint8_t* vdata = cache.Row(true, layer, 0);
  if (staged) {
    const int32_t n_pos = pos0 + n_tok;
    if (kv_stage_.size() < size_t(n_pos) * size_t(k_width + v_width)) {
      kv_stage_.resize(size_t(n_ctx) * size_t(k_width + v_width));
    }
    float* kf = kv_stage_.data();
    float* vf = kf + size_t(n_pos) * size_t(k_width);
    pool_->ParallelFor(n_pos, [&](int64_t b, int64_t e) {
      quant::DequantizeRow(GgmlType::F16, kdata + size_t(b) * size_t(k_width) * 2, kf + size_t(b) * size_t(k_width),
                           (e - b) * k_width);
      quant::DequantizeRow(GgmlType::F16, vdata + size_t(b) * size_t(v_width) * 2, vf + size_t(b) * size_t(v_width),
                           (e - b) * v_width);
    });
    kdata = reinterpret_cast<const uint8_t*>(kf);
    vdata = reinterpret_cast<const uint8_t*>(vf);
  }
  struct Ctx {
    float* scratch;
    const float* q;
    float* out;
    const AttentionParams* ap;
    int32_t n_tok, pos0, group, q_width, o_width, k_width, v_width;
    size_t per_thread;
    const uint8_t* kdata;  // this layer's position 0 (cache types, or F32 when staged)
    const uint8_t* vdata;
    GgmlType kt, vt;       // the rows' types as read here
    size_t k_row, v_row;   // bytes per K / V row as read here
    bool staged;
    bool k_rot, v_rot;     // rows stored rotated (kv_quant.h)
  } c{scratch, q, out, &ap, n_tok, pos0, group, q_width, o_width, k_width, v_width, per_thread, kdata, vdata,
      staged ? GgmlType::F32 : RowType(cache.k_type()), staged ? GgmlType::F32 : RowType(cache.v_type()),
      staged ? size_t(k_width) * 4 : cache.RowBytes(false), staged ? size_t(v_width) * 4 : cache.RowBytes(true), staged,
      kvq::Rotated(cache.k_type()), kvq::Rotated(cache.v_type())};
  pool_->Run(
      [](void* p, int32_t ith, int32_t nth) {
        Ctx& c = *static_cast<Ctx*>(p);
        const AttentionParams& ap = *c.ap;
        float* row = c.scratch + size_t(ith) * c.per_thread;
        const int64_t n_pairs = int64_t{c.n_tok} * ap.n_head;
        for (int64_t pair = ith; pair < n_pairs; pair += nth) {
          const int32_t t = int32_t(pair / ap.n_head);
          const int32_t h = int32_t(pair % ap.n_head);
          const int32_t g = h / c.group;
          const int32_t p_q = c.pos0 + t;
          int32_t lo = 0, last = 0;  // the visible keys
          VisibleKeys(ap, p_q, c.pos0 + c.n_tok - 1, &lo, &last);
          const float* qh = c.q + int64_t{t} * c.q_width + int64_t{h} * ap.head_dim_k;
          // Q goes into K's dot-product type, as the reference does: F16 for an F16 cache (F32
          // sums), Q8_0 for a Q8_0 or Q4_0 cache (integer dot products per block, dequantized in
          // registers by quant::VecDot's kernels); softmax and the weighted sum of V are in F32,
          // each V row dequantized once. Rows are read in place, one KV head at a time.
          float* vrow = row;                                          // one V head in F32
          auto* q16 = reinterpret_cast<uint8_t*>(vrow + ap.head_dim_v);  // Q in K's dot type
          float* scores = reinterpret_cast<float*>(q16 + size_t(ap.head_dim_k) * 4);
          if (c.staged) {  // F16-rounded Q, kept in F32 to meet the staged F32 rows
            quant::QuantizeActivations(GgmlType::F16, qh, scores, ap.head_dim_k);
            quant::DequantizeRow(GgmlType::F16, scores, reinterpret_cast<float*>(q16), ap.head_dim_k);
          } else if (c.k_rot) {  // rotated as the K rows were (kv_quant.h), in the scores' space
            std::copy(qh, qh + ap.head_dim_k, scores);
            kvq::Rotate32(scores, ap.head_dim_k);
            quant::QuantizeActivations(quant::VecDotType(c.kt), scores, q16, ap.head_dim_k);
          } else {
            quant::QuantizeActivations(quant::VecDotType(c.kt), qh, q16, ap.head_dim_k);
          }
          const quant::VecDotFn dot = quant::GetVecDotFn(c.kt);
          const uint8_t* kbase = c.kdata + RowBytes(c.kt, int64_t{g} * ap.head_dim_k);
          const uint8_t* vbase = c.vdata + RowBytes(c.vt, int64_t{g} * ap.head_dim_v);
          float mx = -INFINITY;
          for (int32_t j = lo; j <= last; ++j) {
            const size_t slot = size_t(j);
            float s = dot(ap.head_dim_k, kbase + slot * c.k_row, q16);
            s *= ap.scale;
            if (ap.softcap > 0.0f) s = ap.softcap * std::tanh(s / ap.softcap);
            scores[j - lo] = s;
            mx = std::max(mx, s);
          }
          const int32_t n = last - lo + 1;
          if (ap.sinks != nullptr) mx = std::max(mx, ap.sinks[h]);
          float sum = ap.sinks != nullptr ? std::exp(ap.sinks[h] - mx) : 0.0f;
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
            if (c.vt == GgmlType::F32) {
              vh = reinterpret_cast<const float*>(vbase + slot * c.v_row);
            } else {
              quant::DequantizeRow(c.vt, vbase + slot * c.v_row, vrow, ap.head_dim_v);
            }
            quant::AxpyF32(ap.head_dim_v, w, vh, oh);
          }
          if (c.v_rot) kvq::Rotate32(oh, ap.head_dim_v);  // a sum of rotated V rows, rotated back
        }
      },
      &c);
}

}  // namespace zf::engine
