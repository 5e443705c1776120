// Session: embedding rows as input (an image's embeddings), keyed in the history by their hash.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace zf::rt {

namespace {

// A hash of n floats' bits.
uint64_t HashRows(const float* rows, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ uint64_t(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, rows + i, sizeof bits);
    h = (h ^ bits) * 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

}  // namespace


int32_t Session::EmbeddingToken(uint64_t hash, size_t i) {
  uint64_t h = (hash ^ (uint64_t(i) + 1) * 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  return int32_t(uint32_t(h >> 32) | 0x80000000u);  // the sign bit set: never a token id
}

uint64_t Session::RowsKey(const float* rows, size_t n, bool bidirectional, int32_t cols) {
  // How the rows attend is part of what they are: causal rows are other KV rows; so is the grid
  // that gives them their M-RoPE positions.
  const uint64_t h = HashRows(rows, n) ^ (bidirectional ? 0x6a09e667f3bcc909ull : 0);
  return cols > 0 ? (h ^ uint64_t(cols) * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull : h;
}

int32_t Session::TextPos(size_t at) const {
  // After the last image starting before `at`: its t0 plus its extent, then one per row.
  for (auto it = image_places_.rbegin(); it != image_places_.rend(); ++it) {
    if (it->row0 < at) return it->t0 + std::max(it->rows, it->cols) + int32_t(at - (it->row0 + it->n));
  }
  return int32_t(at);
}

void Session::CutPlaces(size_t n_keep) {
  while (!image_places_.empty() && (image_places_.back().row0 >= n_keep || image_places_.back().n == 0)) {
    image_places_.pop_back();
  }
  for (ImagePlace& p : image_places_) p.n = std::min(p.n, n_keep - p.row0);
}

Status Session::EvalEmbeddings(const float* rows, size_t n, bool bidirectional, bool keep_logits, size_t from,
                               int32_t cols) {
  const model::ModelDesc& d = model_.desc();
  if (n == 0 || from >= n) return InvalidArgument("no embedding rows to evaluate");
  // Qwen2-VL / Qwen3-VL place image rows at 2D M-RoPE positions (t, row, column): without the
  // grid, sequential positions would answer differently from the reference without saying so.
  if (!d.mrope()) cols = 0;
  if (d.mrope() && (cols <= 0 || n % size_t(cols) != 0)) {
    return Unsupported("embedding rows on a model with M-RoPE sections ('" + d.arch +
                       "') take 2D positions from the image's grid of tokens, which rows alone do not give; "
                       "zf_session_eval_image and chat turns place an image there");
  }
  if (!host_) {
    return Unsupported(std::string("embedding input runs on the CPU engine only; this session runs on ") +
                       (model_.engine() != nullptr ? model_.engine()->name() : "another engine"));
  }
  // Per-layer inputs (Gemma 4) take token 0's rows for embedding rows, as llama.cpp's gemma4
  // graph does (Forward::RunEmbd passes token ids 0).
  // Recurrent layers (LFM2's short convolutions, Mamba-2, DeltaNet) read the rows in order like
  // token rows; no family of them has rows attending both ways.
  if (recurrent() && bidirectional) {
    return Unsupported("embedding rows attending both ways on a model with recurrent layers are not supported");
  }
  if (bidirectional && n - from > size_t(max_batch_)) {
    return InvalidArgument(std::to_string(n - from) + " bidirectional rows do not fit one step of " +
                           std::to_string(max_batch_));
  }
  if (size_t(n_past()) + deferred_.size() + (n - from) > size_t(n_ctx_)) {
    return Status(Code::kContextFull, std::to_string(n - from) + " embedding rows do not fit: " +
                                          std::to_string(n_past()) + " of " + std::to_string(n_ctx_) +
                                          " context positions are used");
  }
  ZF_RETURN_IF_ERROR(FlushDeferred());
  const size_t E = size_t(d.n_embd_inp());  // a row: n_embd and its deepstack slices
  const uint64_t hash = RowsKey(rows, n * E, bidirectional, cols);
  if (cols > 0) {
    // Rows [0, from) end the history (a cut image continued): its place says where they went.
    const size_t at = history_.size();
    if (from == 0) {
      image_places_.push_back(ImagePlace{at, 0, int32_t(n / size_t(cols)), cols, TextPos(at), hash});
    } else if (image_places_.empty() || image_places_.back().hash != hash || image_places_.back().n != from ||
               image_places_.back().row0 + from != at) {
      return InvalidArgument("rows[0.." + std::to_string(from) + ") of this image do not end the session's history");
    }
  }
  if (recurrent()) {
    // Kept for Replay: row 0's position (rows[0..from) already end the history).
    const size_t pos0 = history_.size() - std::min(from, history_.size());
    bool known = false;
    for (const EmbdSpan& sp : embd_spans_) known = known || (sp.pos0 == pos0 && sp.hash == hash && sp.n == n);
    if (!known) embd_spans_.push_back(EmbdSpan{pos0, n, hash, std::vector<float>(rows, rows + n * E), cols});
  }
  Status st = EvalRows(rows, hash, bidirectional, keep_logits, from, n);
  // An image none of whose rows went in (cancelled, an error) has no place.
  if (cols > 0 && image_places_.back().n == 0) image_places_.pop_back();
  return st;
}

Status Session::EvalRows(const float* rows, uint64_t hash, bool bidirectional, bool keep_logits, size_t from, size_t to) {
  const size_t E = size_t(model_.desc().n_embd_inp());
  std::vector<int32_t> entries(to - from);
  for (size_t i = from; i < to; ++i) entries[i - from] = EmbeddingToken(hash, i);
  has_logits_ = has_argmax_ = false;
  // Blocks of the same rows from the prefix cache: their keys hold the rows' hash. The rest of
  // a bidirectional span then attends over the cached rows as over its own (each row's keys
  // are the same, computed the same way), so a partly cached span gives the whole span's bits.
  size_t done = prefix_cache_ != nullptr ? ReuseBlocks(entries.data(), entries.size(), keep_logits ? 1 : 0) : 0;
  cached_tokens_ += int64_t(done);
  done += from;
  // Its own context even when batched: the batcher's steps take token ids.
  // M-RoPE: the image's place (EvalEmbeddings added it), whose n follows the rows evaluated, and
  // each step's four positions per row.
  ImagePlace* place = nullptr;
  if (!image_places_.empty() && image_places_.back().hash == hash && image_places_.back().row0 + done == history_.size()) {
    place = &image_places_.back();
    place->n = done;
  }
  std::vector<int32_t> rope_pos;
  model::ForwardPool::Lease borrowed;
  const model::ForwardPool::Lease* ctx = nullptr;
  if (done < to) ZF_RETURN_IF_ERROR(Context(&borrowed, &ctx));
  while (done < to) {
    if (ConsumeCancel()) return Status(Code::kCancelled, "evaluation cancelled");
    const size_t chunk = bidirectional ? to - done : std::min<size_t>(size_t(max_batch_), to - done);
    const bool last = done + chunk == to;
    if (place != nullptr) {
      rope_pos.resize(chunk * 4);
      for (size_t r = 0; r < chunk; ++r) {
        const int32_t i = int32_t(done + r);
        int32_t* p4 = rope_pos.data() + r * 4;
        p4[0] = place->t0;
        p4[1] = place->t0 + i / place->cols;  // the reference's y (row) in section 1
        p4[2] = place->t0 + i % place->cols;  // x (column) in section 2
        p4[3] = 0;
      }
    }
    PlanCopies(chunk, {}, 0);  // recurrent models: the checkpoints of the boundaries it passes
    ctx->forward().RunEmbd(Seq(), rows + done * E, int32_t(chunk), n_past(), bidirectional,
                           last && keep_logits ? logits_.data() : nullptr, place != nullptr ? rope_pos.data() : nullptr);
    ZF_RETURN_IF_ERROR(ctx->backend().TakeError());
    history_.insert(history_.end(), entries.begin() + std::ptrdiff_t(done - from),
                    entries.begin() + std::ptrdiff_t(done - from + chunk));
    KeepCopies();
    done += chunk;
    if (place != nullptr) place->n = done;
    if (prefix_cache_ != nullptr) StoreBlocks();
  }
  has_logits_ = keep_logits;
  return Status::Ok();
}

Status Session::Replay(const std::vector<int32_t>& entries, size_t from, size_t to) {
  for (size_t i = from; i < to;) {
    size_t j = i;
    if (entries[i] >= 0) {
      while (j < to && entries[j] >= 0) ++j;
      ZF_RETURN_IF_ERROR(EvalImpl(entries.data() + i, j - i, nullptr, nullptr));
      i = j;
      continue;
    }
    // The span whose row (i - pos0) is this entry.
    const EmbdSpan* span = nullptr;
    for (const EmbdSpan& sp : embd_spans_) {
      if (sp.pos0 <= i && i < sp.pos0 + sp.n && EmbeddingToken(sp.hash, i - sp.pos0) == entries[i]) span = &sp;
    }
    if (span == nullptr) {
      return Unsupported("position " + std::to_string(i) + " holds embedding rows this session does not have (a loaded "
                         "state): a model with recurrent layers cannot evaluate them again after a truncation");
    }
    const size_t end = std::min(to, span->pos0 + span->n);
    while (j < end && entries[j] == EmbeddingToken(span->hash, j - span->pos0)) ++j;
    // An image the rollback cut before its first row (CutPlaces) takes its place again: the
    // history before it is the same, so are its positions.
    if (span->cols > 0 && i == span->pos0 &&
        (image_places_.empty() || image_places_.back().row0 < i)) {
      image_places_.push_back(
          ImagePlace{i, 0, int32_t(span->n / size_t(span->cols)), span->cols, TextPos(i), span->hash});
    }
    ZF_RETURN_IF_ERROR(EvalRows(span->rows.data(), span->hash, false, false, i - span->pos0, j - span->pos0));
    i = j;
  }
  // Spans past the kept conversation are gone.
  embd_spans_.erase(std::remove_if(embd_spans_.begin(), embd_spans_.end(), [to](const EmbdSpan& sp) { return sp.pos0 >= to; }),
                    embd_spans_.end());
  return Status::Ok();
}

}  // namespace zf::rt
