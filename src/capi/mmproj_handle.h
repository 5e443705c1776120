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

}  // namespace zf::capi
