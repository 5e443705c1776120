// The zf_mmproj handle (vision_api.cpp defines its entry points) and what the session and chat
// turn entry points use of it: an image turned into the embeddings the model takes, through the
// projector's cache of recent images (by content hash), so an image kept in a conversation is
// encoded once, not on every turn.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "mmproj_audio/audio_projector.h"
#include "runtime/chat_turn.h"
#include "runtime/session.h"
#include "vision/encoder.h"
#include "vision/mmproj.h"
#include "vision/projector.h"
#include "zerfoo.h"

// A projector bound to its model. Encoders (each one encode at a time: its own thread pool and
// scratch) are lent to calls from a pool, so concurrent zf_image_embed calls never share one.
struct zf_mmproj {
  zf_model* model = nullptr;  // one reference, released by zf_mmproj_free
  std::unique_ptr<zf::vision::Mmproj> impl;  // an image projector, or
  std::unique_ptr<zf::mmproj_audio::AudioProjector> audio;  // an audio one (audio_embed_api.cpp)
  // The pool and the cache are the handle's only mutable parts (calls take a const projector).
  mutable std::mutex mu;
  mutable std::vector<std::pair<int32_t, std::unique_ptr<zf::vision::VisionEncoder>>> idle;  // by n_threads
  mutable std::vector<std::pair<int32_t, std::unique_ptr<zf::mmproj_audio::AudioEncoder>>> idle_audio;
  // Recent images' embeddings, most recent first: (hash of the image as given, its rows).
  mutable std::list<std::pair<uint64_t, std::shared_ptr<const std::vector<float>>>> recent;
};

namespace zf::capi {

// Images whose embeddings a projector keeps (Gemma 3 270M: 640 KiB each; 4B: 2.5 MiB).
constexpr size_t kRecentImages = 16;

// The embeddings of `image` (all its encoder inputs' rows x n_embd floats, in placement order),
// from the projector's cache or encoded on n_threads (0: the machine's cores, at most 8) and
// kept; *grid (may be null): its tile grid. Errors name the image's fields with `field` in
// front ("image", "request.messages[0].content[1]").
Status EmbedImageCached(const zf_mmproj* p, const zf_image& image, int32_t n_threads, const std::string& field,
                        std::shared_ptr<const std::vector<float>>* rows, vision::TileGrid* grid = nullptr);

// The tile grid of `image` (decoded for its size when the type tiles; nothing encoded), errors
// as above.
Status ImageGrid(const zf_mmproj* p, const zf_image& image, const std::string& field, vision::TileGrid* grid);

// An image's place in the prompt: the projector's marker text and runs of its rows, in
// libmtmd's order (vision::Layout), and whether the rows attend both ways.
struct ImagePlacement {
  std::vector<vision::LayoutPiece> pieces;
  bool bidirectional = false;
};
ImagePlacement PlacementOf(const zf_mmproj* p, const vision::TileGrid& grid);

// A chat turn's image handling on this projector (encoding through the cache on n_threads).
rt::TurnImages TurnImagesOf(const zf_mmproj* p, int32_t n_threads);

// Appends an image's rows to the session with the placement's marker tokens among them
// (vision_session_api.cpp); keep_logits: the last position's logits in last_logits().
Status PlaceImage(rt::Session& s, const ImagePlacement& pl, const std::vector<float>& rows, bool keep_logits);

// Audio projectors (audio_embed_api.cpp). Whether `path` is a GGUF with an audio encoder
// (clip.has_audio_encoder); zf_mmproj_load for one.
bool IsAudioMmproj(const char* path);
zf_status LoadAudioMmproj(zf_model* model, const char* path, zf_mmproj** out);
// The audio tower of `path` checked against the model (Gemma 4's files hold it beside the
// vision one); errors name the file.
Status LoadAudioTower(zf_model* model, const char* path, std::unique_ptr<zf::mmproj_audio::AudioProjector>* out);
// zf_mmproj_info's fields for an audio projector.
void AudioSummary(const zf_mmproj* p, zf_mmproj_summary* s);
// Sample count and values checked (ZF_AUDIO_MIN/MAX_SAMPLES, finite); `field` names them.
Status CheckAudioSamples(const float* pcm, size_t n, const std::string& field);
// Rows a clip of n_samples gives (libmtmd's 30 s chunks).
size_t AudioRows(const zf_mmproj* p, size_t n_samples);
// The refusal of an image given to an audio projector (OK for an image projector), naming `field`.
Status NotImages(const zf_mmproj* p, const std::string& field);
// The refusal of an audio part given to an image projector, naming `field`.
Status NotAudio(const zf_mmproj* p, const std::string& field);
// A clip's rows, from the projector's cache of recent inputs or encoded and kept.
Status EmbedAudioCached(const zf_mmproj* p, const float* pcm, size_t n, int32_t n_threads, const std::string& field,
                        std::shared_ptr<const std::vector<float>>* rows);
// A clip's place in the prompt: libmtmd's markers around its rows (causal).
ImagePlacement AudioPlacementOf(const zf_mmproj* p, size_t n_rows);
// Fills a chat turn's audio handling (input_audio parts: WAV bytes) for this projector.
void AddAudioToTurn(const zf_mmproj* p, int32_t n_threads, rt::TurnImages* t);

}  // namespace zf::capi
