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
#include "runtime/session.h"
#include "vision/encoder.h"
#include "vision/mmproj.h"
#include "zerfoo.h"

// A projector bound to its model. Encoders (each one encode at a time: its own thread pool and
// scratch) are lent to calls from a pool, so concurrent zf_image_embed calls never share one.
struct zf_mmproj {
  zf_model* model = nullptr;  // one reference, released by zf_mmproj_free
  std::unique_ptr<zf::vision::Mmproj> impl;
  // The pool and the cache are the handle's only mutable parts (calls take a const projector).
  mutable std::mutex mu;
  mutable std::vector<std::pair<int32_t, std::unique_ptr<zf::vision::VisionEncoder>>> idle;  // by n_threads
  // Recent images' embeddings, most recent first: (hash of the image as given, its rows).
  mutable std::list<std::pair<uint64_t, std::shared_ptr<const std::vector<float>>>> recent;
};

namespace zf::capi {

// Images whose embeddings a projector keeps (Gemma 3 270M: 640 KiB each; 4B: 2.5 MiB).
constexpr size_t kRecentImages = 16;

// The embeddings of `image` (n_tokens x n_embd floats), from the projector's cache or encoded
// on n_threads (0: the machine's cores, at most 8) and kept. Errors name the image's fields
// with `field` in front ("image", "request.messages[0].content[1]").
Status EmbedImageCached(const zf_mmproj* p, const zf_image& image, int32_t n_threads, const std::string& field,
                        std::shared_ptr<const std::vector<float>>* rows);

// The projector's begin and end marker text around an image's rows (Gemma 3:
// "<start_of_image>", "<end_of_image>") and whether the rows attend both ways.
struct ImagePlacement {
  std::string begin, end;
  bool bidirectional = false;
};
ImagePlacement PlacementOf(const zf_mmproj* p);

// Appends an image's rows to the session with the placement's marker tokens around them
// (vision_session_api.cpp); keep_logits: the last position's logits in last_logits().
Status PlaceImage(rt::Session& s, const ImagePlacement& pl, const std::vector<float>& rows, bool keep_logits);

}  // namespace zf::capi
