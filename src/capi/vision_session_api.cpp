// C entry points that place images and audio clips in a session (issue #46): embedding rows as
// input, and an image or a clip with its projector's markers around it, as libmtmd places it.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "capi/mmproj_handle.h"
#include "tokenizer/tokenizer.h"

using zf::capi::Fail;
using zf::capi::Succeed;

namespace {

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }

// The checks every placing call starts with: a free session, a logits buffer that fits.
zf_status CheckSession(const zf_session* session, const float* logits, size_t cap) {
  if (session == nullptr) return NullArg("session");
  if (session->active != nullptr || session->freed) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "session has a generation or turn in progress; finish or free it first");
  }
  const size_t n_vocab = size_t(session->impl->model().desc().n_vocab);
  if (logits != nullptr && cap > 0 && cap < n_vocab) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "logits buffer holds " + std::to_string(cap) + " floats; " +
                                             std::to_string(n_vocab) + " needed");
  }
  if (logits == nullptr && cap > 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "logits is NULL but cap is " + std::to_string(cap));
  return ZF_OK;
}

// A projector given with a session: present and loaded for the session's model.
zf_status CheckProjector(const zf_session* session, const zf_mmproj* mmproj) {
  if (mmproj == nullptr) return NullArg("mmproj");
  if (mmproj->model->impl != session->model->impl) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "mmproj was loaded for another model (" + mmproj->model->impl->desc().arch +
                                             ", " + std::to_string(mmproj->model->impl->desc().n_embd) +
                                             " wide) than the session's (" + session->model->impl->desc().arch + ", " +
                                             std::to_string(session->model->impl->desc().n_embd) + " wide)");
  }
  return ZF_OK;
}

void CopyLogits(const zf::rt::Session& s, float* logits, size_t cap) {
  if (logits != nullptr && cap > 0 && s.has_logits()) {
    std::memcpy(logits, s.last_logits(), size_t(s.model().desc().n_vocab) * sizeof(float));
  }
}

}  // namespace

namespace zf::capi {

// Declared in mmproj_handle.h: the layout's pieces in order, marker tokens and runs of rows.
Status PlaceImage(rt::Session& s, const ImagePlacement& pl, const std::vector<float>& rows, bool keep_logits) {
  const tok::Tokenizer& tk = s.model().tokenizer();
  const size_t E = size_t(s.model().desc().n_embd_inp());  // a row with its deepstack slices
  size_t row = 0;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pl.pieces.size(); ++i) {
    const vision::LayoutPiece& p = pl.pieces[i];
    const bool last = keep_logits && i + 1 == pl.pieces.size();
    if (p.rows > 0) {
      if ((row + size_t(p.rows)) * E > rows.size()) return Status(Code::kInternal, "image: fewer rows than its layout");
      ZF_RETURN_IF_ERROR(s.EvalEmbeddings(rows.data() + row * E, size_t(p.rows), pl.bidirectional, last, 0, p.cols));
      row += size_t(p.rows);
      continue;
    }
    ZF_RETURN_IF_ERROR(tk.Encode(p.text, false, true, &ids));
    if (ids.empty()) continue;
    ZF_RETURN_IF_ERROR(last ? s.EvalKeepLogits(ids.data(), ids.size()) : s.Eval(ids.data(), ids.size(), nullptr));
  }
  if (row * E != rows.size()) return Status(Code::kInternal, "image: more rows than its layout");
  return Status::Ok();
}

}  // namespace zf::capi

extern "C" {

ZF_API zf_status zf_session_eval_embeddings(zf_session* session, const float* embd, size_t n_tokens, size_t width,
                                            uint32_t flags, float* logits, size_t cap) {
  if (zf_status e = CheckSession(session, logits, cap)) return e;
  if (embd == nullptr) return NullArg("embd");
  if (zf_status e = zf::capi::CheckFlags("flags", flags, ZF_EMBD_BIDIRECTIONAL)) return e;
  zf::rt::Session& s = *session->impl;
  // A row: n_embd floats, then Qwen3-VL's deepstack slices (zf_image_embed's rows as they are).
  const zf::model::ModelDesc& d = s.model().desc();
  const size_t n_embd = size_t(d.n_embd_inp());
  if (width != n_embd) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "width " + std::to_string(width) + " is not the model's n_embd " +
                                             std::to_string(d.n_embd) +
                                             (d.n_deepstack > 0 ? " x (1 + " + std::to_string(d.n_deepstack) +
                                                                      " deepstack layers) = " + std::to_string(n_embd)
                                                                : std::string()));
  }
  if (n_tokens == 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "n_tokens is 0 (no rows to evaluate)");
  ZF_GUARD_BEGIN
  zf::Status st = s.EvalEmbeddings(embd, n_tokens, (flags & ZF_EMBD_BIDIRECTIONAL) != 0, true);
  if (!st.ok()) return Fail(st);
  CopyLogits(s, logits, cap);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_session_eval_image(zf_session* session, const zf_mmproj* mmproj, const zf_image* image,
                                       float* logits, size_t cap) {
  if (zf_status e = CheckSession(session, logits, cap)) return e;
  if (zf_status e = CheckProjector(session, mmproj)) return e;
  if (image == nullptr) return NullArg("image");
  ZF_GUARD_BEGIN
  zf::rt::Session& s = *session->impl;
  std::shared_ptr<const std::vector<float>> rows;
  zf::vision::TileGrid grid;
  zf::Status st = zf::capi::EmbedImageCached(mmproj, *image, s.model().default_threads(), "image", &rows, &grid);
  if (st.ok()) st = zf::capi::PlaceImage(s, zf::capi::PlacementOf(mmproj, grid), *rows, true);
  if (!st.ok()) return Fail(st);
  CopyLogits(s, logits, cap);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_session_eval_audio(zf_session* session, const zf_mmproj* mmproj, const float* pcm,
                                       size_t n_samples, float* logits, size_t cap) {
  if (zf_status e = CheckSession(session, logits, cap)) return e;
  if (zf_status e = CheckProjector(session, mmproj)) return e;
  if (pcm == nullptr) return NullArg("pcm");
  ZF_GUARD_BEGIN
  zf::rt::Session& s = *session->impl;
  std::shared_ptr<const std::vector<float>> rows;
  zf::Status st = zf::capi::EmbedAudioCached(mmproj, pcm, n_samples, s.model().default_threads(), "pcm", &rows);
  if (st.ok()) {
    const size_t n_rows = rows->size() / size_t(s.model().desc().n_embd);
    st = zf::capi::PlaceImage(s, zf::capi::AudioPlacementOf(mmproj, n_rows), *rows, true);
  }
  if (!st.ok()) return Fail(st);
  CopyLogits(s, logits, cap);
  return Succeed();
  ZF_GUARD_END
}

}  // extern "C"
