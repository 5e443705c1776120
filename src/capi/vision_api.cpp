// C entry points for images (issue #46): load a vision projector (mmproj) for a loaded model,
// describe it, and turn an image (encoded bytes or RGB8 pixels) into the embeddings the model
// takes in its prompt. src/vision/ does the work.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "capi/handles.h"
#include "capi/mmproj_handle.h"
#include "gguf/gguf.h"
#include "vision/encoder.h"
#include "vision/image.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"

using zf::capi::Fail;
using zf::capi::Succeed;

#if UINTPTR_MAX == 0xffffffffffffffffu
static_assert(sizeof(zf_mmproj_summary) == 48 && offsetof(zf_mmproj_summary, projector_type) == 32 &&
                  offsetof(zf_mmproj_summary, modalities) == 40 && offsetof(zf_mmproj_summary, sample_rate) == 44,
              "zf_mmproj_summary layout is part of the ABI");
static_assert(sizeof(zf_image) == 32 && offsetof(zf_image, size) == 16 && offsetof(zf_image, width) == 24,
              "zf_image layout is part of the ABI");
#endif
static_assert(zf::vision::kDefaultMaxPixels == ZF_IMAGE_MAX_PIXELS, "ZF_IMAGE_MAX_PIXELS is the decoder's budget");

namespace {

// clip.has_vision_encoder: a file with both towers (Gemma 4's) loads as an image projector.
bool HasVisionEncoder(const char* path) {
  std::unique_ptr<zf::gguf::GgufFile> f;
  bool b = false;
  return zf::gguf::GgufFile::Open(path, zf::gguf::OpenOptions{}, &f).ok() && f->GetBool("clip.has_vision_encoder", &b).ok() && b;
}

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }


// An encoder for n_threads from the pool (or a new one); handed back with Return().
std::unique_ptr<zf::vision::VisionEncoder> Borrow(const zf_mmproj* p, int32_t n_threads) {
  {
    std::lock_guard<std::mutex> lock(p->mu);
    for (auto it = p->idle.begin(); it != p->idle.end(); ++it) {
      if (it->first != n_threads) continue;
      std::unique_ptr<zf::vision::VisionEncoder> e = std::move(it->second);
      p->idle.erase(it);
      return e;
    }
  }
  return std::make_unique<zf::vision::VisionEncoder>(*p->impl, n_threads);
}

// Idle encoders kept per projector: each holds a thread pool's threads and its scratch, so a
// burst of concurrent calls does not leave all of its encoders behind.
constexpr size_t kMaxIdleEncoders = 4;

void Return(const zf_mmproj* p, int32_t n_threads, std::unique_ptr<zf::vision::VisionEncoder> e) {
  std::lock_guard<std::mutex> lock(p->mu);
  if (p->idle.size() < kMaxIdleEncoders) p->idle.emplace_back(n_threads, std::move(e));
}

// The caller's zf_image checked and decoded (or copied) into pixels; each bad field named
// (`field` in front: "image", or the request part the image came from).
// *copy: the caller's struct as this version reads it (fields past its struct_size zero).
zf::Status ReadImage(const zf_image* image, const std::string& field, zf::vision::Image* img, zf_image* copy) {
  using zf::InvalidArgument;
  zf_image& in = *copy;
  std::memset(&in, 0, sizeof in);
  if (image->struct_size < offsetof(zf_image, width)) {
    return InvalidArgument(field + "->struct_size " + std::to_string(image->struct_size) +
                           " is too small (set it to sizeof(zf_image))");
  }
  std::memcpy(static_cast<void*>(&in), image, std::min<size_t>(image->struct_size, sizeof in));
  if (in.data == nullptr) return InvalidArgument(field + "->data is NULL");
  if (in.size == 0) return InvalidArgument(field + "->size is 0 (no image bytes)");
  const auto* bytes = static_cast<const uint8_t*>(in.data);
  if (in.format == ZF_IMAGE_ENCODED) {
    if (in.width != 0 || in.height != 0) {
      return InvalidArgument(field + "->width and " + field +
                             "->height must be 0 for ZF_IMAGE_ENCODED (the file says its size)");
    }
    zf::Status s = zf::vision::DecodeImage(bytes, in.size, img);
    if (!s.ok()) return zf::Status(s.code(), field + ": " + s.message());
    return zf::Status::Ok();
  }
  if (in.format != ZF_IMAGE_RGB8) {
    return InvalidArgument(field + "->format " + std::to_string(in.format) +
                           " is unknown (ZF_IMAGE_ENCODED = 0, ZF_IMAGE_RGB8 = 1)");
  }
  if (in.width == 0 || in.height == 0) {
    return InvalidArgument(field + "->width x " + field + "->height is " + std::to_string(in.width) + " x " +
                           std::to_string(in.height) + ": ZF_IMAGE_RGB8 needs both nonzero");
  }
  const uint64_t pixels = uint64_t(in.width) * in.height;
  if (pixels > uint64_t(ZF_IMAGE_MAX_PIXELS)) {
    return InvalidArgument(field + ": " + std::to_string(in.width) + " x " + std::to_string(in.height) +
                           " pixels exceed the budget of " + std::to_string(ZF_IMAGE_MAX_PIXELS) +
                           " (ZF_IMAGE_MAX_PIXELS)");
  }
  if (uint64_t(in.size) != pixels * 3) {
    return InvalidArgument(field + "->size is " + std::to_string(in.size) + " bytes; ZF_IMAGE_RGB8 " +
                           std::to_string(in.width) + " x " + std::to_string(in.height) +
                           " needs width * height * 3 = " + std::to_string(pixels * 3));
  }
  img->width = static_cast<int32_t>(in.width);
  img->height = static_cast<int32_t>(in.height);
  img->rgb.assign(bytes, bytes + in.size);
  return zf::Status::Ok();
}

int32_t DefaultThreads(int32_t n_threads) {
  return n_threads > 0 ? n_threads : static_cast<int32_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// The rows an image gives: its tiles' and overview's, or the one image's (TileGrid::total_rows).
size_t RowsOf(const zf::vision::VisionHparams& hp, const zf::vision::Image& img) {
  return size_t(zf::vision::PlanTiles(hp, img.width, img.height).total_rows(hp.n_tokens()));
}

// Encodes decoded pixels on an encoder borrowed from the pool; checks the size it returns.
zf::Status Encode(const zf_mmproj* p, const zf::vision::Image& img, int32_t n_threads, std::vector<float>* embd) {
  n_threads = DefaultThreads(n_threads);
  std::unique_ptr<zf::vision::VisionEncoder> enc = Borrow(p, n_threads);
  zf::Status s = enc->Encode(img, embd);
  Return(p, n_threads, std::move(enc));
  ZF_RETURN_IF_ERROR(s);
  const zf::vision::VisionHparams& hp = p->impl->hparams();
  const size_t n = RowsOf(hp, img) * size_t(hp.row_width());
  if (embd->size() != n) {
    return zf::Status(zf::Code::kInternal, "vision encoder returned " + std::to_string(embd->size()) +
                                               " floats, expected " + std::to_string(n));
  }
  return zf::Status::Ok();
}

// The cache's key: the image as given (format, size, bytes), FNV-1a.
uint64_t ImageKey(const zf_image& image) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](const void* data, size_t n) {
    const auto* b = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  };
  const uint32_t head[3] = {image.format, image.width, image.height};
  const uint64_t size = image.size;
  mix(head, sizeof head);
  mix(&size, sizeof size);
  if (image.data != nullptr) mix(image.data, image.size);
  return h;
}

}  // namespace

namespace zf::capi {

Status EmbedImageCached(const zf_mmproj* p, const zf_image& image, int32_t n_threads, const std::string& field,
                        std::shared_ptr<const std::vector<float>>* rows, vision::TileGrid* grid) {
  ZF_RETURN_IF_ERROR(NotImages(p, field));
  zf::vision::Image img;
  zf_image in;
  ZF_RETURN_IF_ERROR(ReadImage(&image, field, &img, &in));
  if (grid != nullptr) *grid = zf::vision::PlanTiles(p->impl->hparams(), img.width, img.height);
  const uint64_t key = ImageKey(in);
  {
    std::lock_guard<std::mutex> lock(p->mu);
    for (auto it = p->recent.begin(); it != p->recent.end(); ++it) {
      if (it->first != key) continue;
      p->recent.splice(p->recent.begin(), p->recent, it);
      *rows = it->second;
      return Status::Ok();
    }
  }
  auto embd = std::make_shared<std::vector<float>>();
  ZF_RETURN_IF_ERROR(Encode(p, img, n_threads, embd.get()));
  std::lock_guard<std::mutex> lock(p->mu);
  p->recent.emplace_front(key, embd);
  if (p->recent.size() > kRecentImages) p->recent.pop_back();
  *rows = std::move(embd);
  return Status::Ok();
}

Status ImageGrid(const zf_mmproj* p, const zf_image& image, const std::string& field, vision::TileGrid* grid) {
  *grid = vision::TileGrid{};
  ZF_RETURN_IF_ERROR(NotImages(p, field));
  if (p->impl->hparams().spec->tiling == vision::Tiling::kFitAndPad) return Status::Ok();  // one square, any size
  zf::vision::Image img;
  zf_image in;
  ZF_RETURN_IF_ERROR(ReadImage(&image, field, &img, &in));
  *grid = zf::vision::PlanTiles(p->impl->hparams(), img.width, img.height);
  return Status::Ok();
}

ImagePlacement PlacementOf(const zf_mmproj* p, const vision::TileGrid& grid) {
  const zf::vision::VisionHparams& hp = p->impl->hparams();
  ImagePlacement pl;
  pl.pieces = zf::vision::Layout(*hp.spec, grid, hp.n_tokens());
  pl.bidirectional = zf::vision::RowsBidirectional(*hp.spec, hp.proj_width);  // mtmd_decode_use_non_causal
  return pl;
}

namespace {

zf_image EncodedImage(std::string_view bytes) {
  zf_image im;
  std::memset(&im, 0, sizeof im);
  im.struct_size = sizeof im;
  im.format = ZF_IMAGE_ENCODED;
  im.data = bytes.data();
  im.size = bytes.size();
  return im;
}

std::vector<rt::ImagePiece> Pieces(const ImagePlacement& pl) {
  std::vector<rt::ImagePiece> out;
  for (const vision::LayoutPiece& p : pl.pieces) out.push_back(rt::ImagePiece{p.text, size_t(p.rows), p.cols});
  return out;
}

}  // namespace

Status NotImages(const zf_mmproj* p, const std::string& field) {
  if (p->impl) return Status::Ok();
  return InvalidArgument(field + ": the projector '" + p->audio->hparams().projector +
                         "' encodes audio, not images (an image needs a vision projector)");
}

rt::TurnImages TurnImagesOf(const zf_mmproj* p, int32_t n_threads) {
  rt::TurnImages t;
  AddAudioToTurn(p, n_threads, &t);  // an image projector's refuse audio parts, and the reverse
  t.bidirectional = p->impl && zf::vision::RowsBidirectional(*p->impl->hparams().spec, p->impl->hparams().proj_width);
  t.embed = [p, n_threads](std::string_view bytes, const std::string& field, std::shared_ptr<const std::vector<float>>* rows,
                           std::vector<rt::ImagePiece>* pieces) {
    vision::TileGrid grid;
    ZF_RETURN_IF_ERROR(EmbedImageCached(p, EncodedImage(bytes), n_threads, field, rows, &grid));
    *pieces = Pieces(PlacementOf(p, grid));
    return Status::Ok();
  };
  t.layout = [p](std::string_view bytes, const std::string& field, std::vector<rt::ImagePiece>* pieces) {
    vision::TileGrid grid;
    ZF_RETURN_IF_ERROR(ImageGrid(p, EncodedImage(bytes), field, &grid));
    *pieces = Pieces(PlacementOf(p, grid));
    return Status::Ok();
  };
  return t;
}

}  // namespace zf::capi

extern "C" {

ZF_API zf_status zf_mmproj_load(zf_model* model, const char* path, uint32_t flags, zf_mmproj** out) {
  if (out != nullptr) *out = nullptr;
  if (model == nullptr) return NullArg("model");
  if (path == nullptr) return NullArg("path");
  if (out == nullptr) return NullArg("out");
  if (zf_status e = zf::capi::CheckFlags("flags", flags, 0)) return e;
  ZF_GUARD_BEGIN
  if (zf::capi::IsAudioMmproj(path) && !HasVisionEncoder(path)) return zf::capi::LoadAudioMmproj(model, path, out);
  std::unique_ptr<zf::vision::Mmproj> m;
  zf::Status s = zf::vision::Mmproj::Load(path, &m);
  if (!s.ok()) return Fail(static_cast<int32_t>(s.code()), std::string(path) + ": " + s.message());
  // Both mismatches in one message: a projector of another model usually differs in both.
  const zf::model::ModelDesc& c = model->impl->desc();
  const zf::vision::VisionHparams& hp = m->hparams();
  std::string why;
  if (!m->CheckLanguageModel(c.n_embd_inp()).ok()) {
    why = "its output width " + std::to_string(hp.row_width()) + " is not the model's " +
          (c.n_deepstack > 0 ? "input width (n_embd x (1 + deepstack layers)) " : "embedding width ") +
          std::to_string(c.n_embd_inp());
  }
  const char* family = hp.spec->family;
  if (!zf::vision::ForFamily(*hp.spec, c.arch)) {
    if (!why.empty()) why += "; ";
    why += "its type '" + hp.projector + "' is for '" + family + "' models, the model is '" + c.arch + "'";
  }
  if (!why.empty()) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(path) + ": the projector does not belong to this model: " + why);
  }
  auto h = std::make_unique<zf_mmproj>();
  h->model = model;
  h->impl = std::move(m);
  // Gemma 4's files: the audio tower beside the vision one, both in the one handle.
  if (zf::capi::IsAudioMmproj(path)) {
    if (zf::Status st = zf::capi::LoadAudioTower(model, path, &h->audio); !st.ok()) return Fail(st);
  }
  model->refs.fetch_add(1, std::memory_order_relaxed);
  *out = h.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API void zf_mmproj_free(zf_mmproj* mmproj) {
  if (mmproj == nullptr) return;
  zf_model* m = mmproj->model;
  delete mmproj;
  zf::capi::ReleaseModel(m);
}

ZF_API zf_status zf_mmproj_info(const zf_mmproj* mmproj, zf_mmproj_summary* info) {
  if (mmproj == nullptr) return NullArg("mmproj");
  if (info == nullptr) return NullArg("info");
  if (info->struct_size < sizeof(uint32_t)) return Fail(ZF_ERR_INVALID_ARGUMENT, "info->struct_size is too small");
  zf_mmproj_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = static_cast<uint32_t>(std::min<size_t>(info->struct_size, sizeof s));
  if (mmproj->audio && !mmproj->impl) {
    zf::capi::AudioSummary(mmproj, &s);
    std::memcpy(static_cast<void*>(info), &s, s.struct_size);
    return Succeed();
  }
  const zf::vision::VisionHparams& hp = mmproj->impl->hparams();
  s.modalities = ZF_MODALITY_IMAGE;
  const bool dynamic = zf::vision::OwnSize(hp.spec->tiling);  // no fixed input size
  s.image_size = dynamic ? 0 : hp.image_size;
  s.patch_size = hp.patch_size;
  s.n_tokens = dynamic ? 0 : hp.n_tokens();
  s.n_embd = hp.row_width();  // zf_image_embed's row (Qwen3-VL: with its deepstack slices)
  s.n_embd_vision = hp.n_embd;
  s.n_layer = hp.n_layer;
  s.projector_type = hp.projector.c_str();
  if (mmproj->audio) {  // two towers (Gemma 4): the image fields above, audio beside them
    s.modalities |= ZF_MODALITY_AUDIO;
    s.sample_rate = zf::mmproj_audio::kSampleRate;
  }
  std::memcpy(static_cast<void*>(info), &s, s.struct_size);
  return Succeed();
}

ZF_API zf_status zf_image_embed(const zf_mmproj* mmproj, const zf_image* image, int32_t n_threads, float* out,
                                size_t cap, size_t* needed, int32_t* n_tokens) {
  if (mmproj == nullptr) return NullArg("mmproj");
  if (image == nullptr) return NullArg("image");
  if (needed == nullptr) return NullArg("needed");
  *needed = 0;
  if (n_tokens != nullptr) *n_tokens = 0;
  if (out == nullptr && cap != 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "out is NULL but cap is " + std::to_string(cap));
  if (n_threads < 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "n_threads must be >= 0, got " + std::to_string(n_threads));
  ZF_GUARD_BEGIN
  if (zf::Status s = zf::capi::NotImages(mmproj, "mmproj"); !s.ok()) return Fail(s);
  zf::vision::Image img;
  zf_image in;
  if (zf::Status s = ReadImage(image, "image", &img, &in); !s.ok()) return Fail(s);
  // The size follows from the image's size alone: known before the (costly) encode.
  const zf::vision::VisionHparams& hp = mmproj->impl->hparams();
  const size_t n_rows = RowsOf(hp, img), n = n_rows * size_t(hp.row_width());
  *needed = n;
  if (n_tokens != nullptr) *n_tokens = static_cast<int32_t>(n_rows);
  if (cap < n) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "out holds " + std::to_string(cap) + " floats; the image's embeddings need " +
                                             std::to_string(n) + " (*needed)");
  }
  std::vector<float> embd;
  if (zf::Status s = Encode(mmproj, img, n_threads, &embd); !s.ok()) return Fail(s);
  std::memcpy(out, embd.data(), n * sizeof(float));
  return Succeed();
  ZF_GUARD_END
}

}  // extern "C"
