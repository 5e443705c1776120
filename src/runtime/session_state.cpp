// Session state as bytes: a header that names the model (so a state is never loaded into
// another model's session), the conversation tokens, and the engine's KV rows.
//
// Layout (little-endian): "ZFST", u32 version, u64 model fingerprint, u32 kv types (KvTypesWord),
// u32 n_past,
// u32 n_deferred (Session::deferred()), i32 tokens[n_past + n_deferred], u64 kv bytes, kv bytes; version 2 (models with
// recurrent layers) then has u64 R (floats of one recurrent state), u32 n_checkpoints
// (= n_past / Session::kCheckpointInterval), f32 state[R], f32 checkpoints[n_checkpoints][R].
// Version 3 (what recurrent models write since checkpoints are thinned, session.h) has instead
// u64 R, u32 n_blocks (= n_past / kCheckpointInterval), u32 n_kept, f32 state[R], then n_kept x
// (u32 block index, ascending and < n_blocks; f32 checkpoint[R]). Version 2 is still read.
// Attention-only models write version 1, as before; version 4 (an M-RoPE model's session with
// images, Session::image_places_) is version 1 followed by u32 n_places and per place u64 row0,
// u64 n, i32 rows, i32 cols, i32 t0, u64 hash (the text after an image continues at a position
// the KV rows alone do not tell).
//
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/session.h"

namespace zf::rt {
namespace {

constexpr char kMagic[4] = {'Z', 'F', 'S', 'T'};
constexpr uint32_t kVersion = 1;           // attention-only models
constexpr uint32_t kVersionRecurrent2 = 2;  // with every checkpoint (read only)
constexpr uint32_t kVersionRecurrent = 3;   // with the checkpoints kept
constexpr uint32_t kVersionPlaces = 4;      // attention-only, with M-RoPE image places
constexpr size_t kPlaceBytes = 8 + 8 + 4 + 4 + 4 + 8;
constexpr size_t kHeader = 4 + 4 + 8 + 4 + 4 + 4;

// FNV-1a over what makes KV rows of one model meaningless in another: the architecture, sizes,
// and every tensor's name, type and shape.
uint64_t Fingerprint(const model::Model& m) {
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  const model::ModelDesc& d = m.desc();
  mix(d.arch.data(), d.arch.size());
  const int32_t sizes[] = {d.n_vocab, d.n_layer, d.n_embd, d.MaxKWidth(), d.MaxVWidth()};
  mix(sizes, sizeof sizes);
  for (const gguf::TensorInfo& t : m.file().tensors()) {
    mix(t.name.data(), t.name.size());
    mix(&t.type, sizeof t.type);
    mix(t.ne, sizeof t.ne);
  }
  return h;
}

// K's type in the low byte; V's type + 1 in the next byte when it differs from K's (0 when V's is
// K's, so states written before V had a type of its own read the same).
uint32_t KvTypesWord(engine::KvType k, engine::KvType v) {
  return uint32_t(k) | (v == k ? 0u : (uint32_t(v) + 1) << 8);
}
std::string KvTypesText(uint32_t w) {
  const auto name = [](uint32_t t) {
    return engine::KvTypeValid(int32_t(t)) ? std::string(engine::KvTypeName(engine::KvType(t)))
                                           : "unknown(" + std::to_string(t) + ")";
  };
  const uint32_t k = w & 0xff, v = (w >> 8) & 0xff;
  return "K " + name(k) + " / V " + name(v == 0 ? k : v - 1);
}

template <typename T>
void Put(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}
template <typename T>
T Get(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

}  // namespace

Status Session::StateSize(size_t* size) const {
  const size_t kv = kv_->StateBytes(n_past());
  if (kv == 0 && n_past() > 0) return Unsupported("this engine cannot save its KV cache");
  *size = kHeader + (history_.size() + deferred_.size()) * 4 + 8 + kv;
  if (recurrent()) *size += 8 + 4 + 4 + state_.bytes() + n_checkpoints() * (4 + state_.bytes());
  if (!image_places_.empty()) {
    if (recurrent()) return Unsupported("image places in a session with recurrent layers cannot be saved");
    *size += 4 + image_places_.size() * kPlaceBytes;
  }
  return Status::Ok();
}

Status Session::SaveState(uint8_t* buf, size_t cap, size_t* written) const {
  size_t need = 0;
  ZF_RETURN_IF_ERROR(StateSize(&need));
  *written = need;
  if (cap < need) return Status(Code::kBufferTooSmall, "the session state needs " + std::to_string(need) + " bytes");
  uint8_t* p = buf;
  std::memcpy(p, kMagic, 4);
  p += 4;
  Put<uint32_t>(p, recurrent() ? kVersionRecurrent : image_places_.empty() ? kVersion : kVersionPlaces);
  Put<uint64_t>(p, Fingerprint(model_));
  Put<uint32_t>(p, KvTypesWord(kv_k_, kv_v_));
  Put<uint32_t>(p, uint32_t(history_.size()));
  Put<uint32_t>(p, uint32_t(deferred_.size()));
  for (int32_t t : history_) Put<int32_t>(p, t);
  for (int32_t t : deferred_) Put<int32_t>(p, t);
  const size_t kv = kv_->StateBytes(n_past());
  Put<uint64_t>(p, kv);
  ZF_RETURN_IF_ERROR(kv_->ReadRows(0, n_past(), p));
  if (!image_places_.empty()) {
    p += kv;
    Put<uint32_t>(p, uint32_t(image_places_.size()));
    for (const ImagePlace& ip : image_places_) {
      Put<uint64_t>(p, ip.row0);
      Put<uint64_t>(p, ip.n);
      Put<int32_t>(p, ip.rows);
      Put<int32_t>(p, ip.cols);
      Put<int32_t>(p, ip.t0);
      Put<uint64_t>(p, ip.hash);
    }
  }
  if (recurrent()) {
    p += kv;
    Put<uint64_t>(p, uint64_t(state_.size()));
    Put<uint32_t>(p, uint32_t(history_.size() / size_t(kCheckpointInterval)));
    Put<uint32_t>(p, uint32_t(n_checkpoints()));
    std::memcpy(p, state_.values().data(), state_.bytes());
    p += state_.bytes();
    for (size_t j = 0; j < block_states_.size(); ++j) {
      if (block_states_[j].empty()) continue;
      Put<uint32_t>(p, uint32_t(j));
      std::memcpy(p, block_states_[j].data(), state_.bytes());
      p += state_.bytes();
    }
  }
  return Status::Ok();
}

Status Session::LoadState(const uint8_t* buf, size_t len) {
  if (len < kHeader || std::memcmp(buf, kMagic, 4) != 0) return FormatError("not a zerfoo session state (bad magic or size)");
  const uint8_t* p = buf + 4;
  const uint32_t version = Get<uint32_t>(p);
  if (version != kVersion && version != kVersionRecurrent2 && version != kVersionRecurrent && version != kVersionPlaces) {
    return Unsupported("session state version " + std::to_string(version) + " is not supported");
  }
  if ((version != kVersion && version != kVersionPlaces) != recurrent()) {
    return InvalidArgument(recurrent() ? "the session state has no recurrent state, and this model has recurrent layers"
                                       : "the session state has a recurrent state, and this model has none");
  }
  if (Get<uint64_t>(p) != Fingerprint(model_)) {
    return InvalidArgument("the session state was saved from another model (architecture, sizes or tensors differ)");
  }
  const uint32_t types = Get<uint32_t>(p);
  if (types != KvTypesWord(kv_k_, kv_v_)) {
    return InvalidArgument("the session state has KV cache types " + KvTypesText(types) + "; this session has " +
                           KvTypesText(KvTypesWord(kv_k_, kv_v_)) + " (create the session with the state's types)");
  }
  const uint32_t n_hist = Get<uint32_t>(p), n_pend = Get<uint32_t>(p);
  if (uint64_t(n_hist) + n_pend > uint64_t(n_ctx_)) {
    return Status(Code::kContextFull, "the session state holds " + std::to_string(uint64_t(n_hist) + n_pend) +
                                          " tokens; this session's context is " + std::to_string(n_ctx_));
  }
  const size_t toks = (size_t(n_hist) + n_pend) * 4;
  if (len - kHeader < toks + 8) return FormatError("truncated session state");
  std::vector<int32_t> hist(n_hist), pend(n_pend);
  for (int32_t& t : hist) t = Get<int32_t>(p);
  for (int32_t& t : pend) t = Get<int32_t>(p);
  for (int32_t t : hist) {  // negative: a position of embedding rows (an image; EmbeddingToken)
    if (t >= model_.desc().n_vocab) return FormatError("session state holds token id " + std::to_string(t) + " outside the vocabulary");
  }
  for (int32_t t : pend) {
    if (t < 0 || t >= model_.desc().n_vocab) return FormatError("session state holds token id " + std::to_string(t) + " outside the vocabulary");
  }
  const uint64_t kv = Get<uint64_t>(p);
  const size_t rest = len - kHeader - toks - 8;  // kv bytes, then the recurrent section
  const size_t n_ckpt = n_hist / size_t(kCheckpointInterval);
  if (kv != kv_->StateBytes(int32_t(n_hist)) || rest < kv) {
    return FormatError("session state KV size " + std::to_string(kv) + " does not match this session's cache");
  }
  std::vector<float> state;                      // the state after the history
  std::vector<std::vector<float>> checkpoints;   // per block; empty where none was kept
  std::vector<ImagePlace> places;                // version 4
  if (recurrent()) {
    const uint8_t* r = p + kv;
    const size_t avail = rest - kv;
    const size_t head = version == kVersionRecurrent ? 16 : 12;
    if (avail < head) return FormatError("truncated session state (recurrent section)");
    const uint64_t floats = Get<uint64_t>(r);
    const uint32_t blocks = Get<uint32_t>(r);
    const uint32_t kept = version == kVersionRecurrent ? Get<uint32_t>(r) : blocks;
    const size_t per = version == kVersionRecurrent ? 4 + state_.bytes() : state_.bytes();
    if (floats != state_.size() || blocks != n_ckpt || kept > blocks) {
      return FormatError("session state's recurrent state (" + std::to_string(floats) + " floats, " +
                         std::to_string(blocks) + " blocks) does not match this model's (" +
                         std::to_string(state_.size()) + " floats, " + std::to_string(n_ckpt) + " blocks)");
    }
    if (avail != head + state_.bytes() + size_t(kept) * per) return FormatError("session state's recurrent section has the wrong size");
    auto read = [&](std::vector<float>* out) {
      out->resize(state_.size());
      std::memcpy(out->data(), r, state_.bytes());
      r += state_.bytes();
      for (float v : *out) {
        if (!std::isfinite(v)) return false;
      }
      return true;
    };
    if (!read(&state)) return FormatError("session state's recurrent state holds a non-finite value");
    checkpoints.resize(n_ckpt);
    int64_t prev = -1;
    for (uint32_t k = 0; k < kept; ++k) {
      const uint32_t j = version == kVersionRecurrent ? Get<uint32_t>(r) : k;
      if (int64_t(j) <= prev || j >= n_ckpt) return FormatError("session state's checkpoint blocks are out of order or range");
      prev = j;
      if (!read(&checkpoints[j])) return FormatError("session state's recurrent state holds a non-finite value");
    }
  } else if (version == kVersionPlaces) {
    const uint8_t* r = p + kv;
    const size_t avail = rest - kv;
    const uint32_t n_places = avail >= 4 ? Get<uint32_t>(r) : 0;
    if (avail < 4 || avail != 4 + size_t(n_places) * kPlaceBytes) return FormatError("session state's image places have the wrong size");
    if (!model_.desc().mrope()) return FormatError("session state has image places, and this model has no M-RoPE sections");
    for (uint32_t k = 0; k < n_places; ++k) {
      ImagePlace ip;
      ip.row0 = size_t(Get<uint64_t>(r));
      ip.n = size_t(Get<uint64_t>(r));
      ip.rows = Get<int32_t>(r);
      ip.cols = Get<int32_t>(r);
      ip.t0 = Get<int32_t>(r);
      ip.hash = Get<uint64_t>(r);
      // Each place's rows are its image's entries, in order after the one before.
      bool ok = ip.rows > 0 && ip.cols > 0 && ip.t0 >= 0 && ip.n > 0 && ip.n <= size_t(ip.rows) * size_t(ip.cols) &&
                ip.row0 <= n_hist && ip.n <= n_hist - ip.row0 &&
                (places.empty() || places.back().row0 + places.back().n <= ip.row0);
      for (size_t i = 0; ok && i < ip.n; ++i) ok = hist[ip.row0 + i] == EmbeddingToken(ip.hash, i);
      if (!ok) return FormatError("session state's image place " + std::to_string(k) + " does not match its history");
      places.push_back(ip);
    }
  } else if (rest != kv) {
    return FormatError("session state KV size " + std::to_string(kv) + " does not match this session's cache");
  }
  ForgetRows(0);  // no rows (or mapped cache blocks) of the old history stay behind the new ones
  ZF_RETURN_IF_ERROR(kv_->WriteRows(0, int32_t(n_hist), p));
  if (recurrent()) {
    state_.Assign(state.data());
    block_states_ = std::move(checkpoints);
  }
  mark_pos_ = -1;
  history_ = std::move(hist);
  embd_spans_.clear();  // a loaded state has no rows to evaluate again (Replay refuses)
  image_places_ = std::move(places);
  deferred_ = std::move(pend);
  block_keys_.clear();
  stored_blocks_ = 0;
  store_blocks_ = false;  // see session.h: rows of unknown exactness are not shared
  has_logits_ = has_argmax_ = false;
  return Status::Ok();
}

}  // namespace zf::rt
