// What differs between vision projector types, written as data (one row per clip.projector_type)
// rather than as a code path per family: how the encoder's patches become tokens, the norm and
// projection after them, how an image is cut into encoder inputs, the resampling filter, how the
// rows attend in the language model and the marker text libmtmd puts around them (mtmd.cpp).
// Layout() turns a row and an image's tile grid into the prompt's pieces, in libmtmd's order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zf::vision {

enum class Merge : int32_t {
  kAvgPool,       // n_merge x n_merge average pooling of the patch grid (Gemma 3)
  kPixelShuffle,  // each n_merge x n_merge block of patches concatenated into one token (Idefics3)
  kPatchMerger,   // RMS norm x mm.input_norm, each n_merge x n_merge block unfolded channel-major
                  // (torch unfold), mm.patch_merger, then the mm.1 / GELU / mm.2 MLP (Pixtral;
                  // n_merge 1: the MLP alone)
};

enum class Tiling : int32_t {
  kFitAndPad,    // one image_size square: scaled to fit, centred on black (Gemma 3)
  kLongestEdge,  // scaled to clip.vision.preproc_image_size on the longer side, then to whole
                 // image_size tiles; the tiles row by row and an overview of the whole (Idefics3)
  kDynamic,      // one image of its own size: scaled to whole patch_size x n_merge blocks (aspect
                 // kept, rounded; within min/max pixels), centred on black (Pixtral)
  kSmartResize,  // one image of its own size: stretched to the same whole-block size, no border;
                 // images over the spec's TileRule budget cut into tiles and that image as the
                 // thumbnail (LFM2-VL)
};

// Tiling::kSmartResize's tiles (libmtmd's lfm2 preprocessor): an image whose block-rounded size
// is over over_budget x max pixels is stretched (a PAD_CEIL border) to a grid of size x size
// tiles, the grid of min_tiles..max_tiles tiles whose aspect ratio is closest to the image's
// (ties to the larger grid when the image covers half its area); size 0: never cut.
struct TileRule {
  int32_t size = 0;
  int32_t min_tiles = 0, max_tiles = 0;
  double over_budget = 0;
};

// Whether each image is taken at its own (block-rounded) size rather than a fixed square.
inline bool OwnSize(Tiling t) { return t == Tiling::kDynamic || t == Tiling::kSmartResize; }

enum class Resample : int32_t { kBilinear, kLanczos, kBicubic };  // Pillow's filters

// The ViT's form: SigLIP (LayerNorm with biases, learned positions, GELU MLP) or Pixtral's
// (RMS norms, 2D rotary positions on q and k, SiLU-gated MLP, no biases).
// kLfm2: SigLIP with the position table resized to the patch grid (vision/lfm2_vl.cpp).
// kGemma4v: vision/gemma4v.cpp; kQwen25vl, kQwen3vl: vision/qwen_vl.cpp.
enum class Vit : int32_t { kSiglip, kPixtral, kGemma4v, kQwen25vl, kLfm2, kQwen3vl };

struct ProjectorSpec {
  const char* type;    // clip.projector_type
  const char* family;  // the language models' general.architecture it belongs to ("a, b": either)
  Merge merge;
  bool soft_norm;          // RMS norm times mm.soft_emb_norm.weight before the projection
  const char* proj;        // the projection's tensor (without ".weight")
  bool proj_transposed;    // stored [out][in] in ggml order (multiplied by its transpose)
  Tiling tiling;
  Resample resample;
  bool bidirectional;  // the rows attend both ways in the LM (mtmd_decode_use_non_causal)
  // Marker text. One image (no tiles): begin, rows, end. Tiles: begin, per tile the tile_begin
  // format (row, column from 1) and its rows, row_end between rows of tiles; then overview_begin
  // (each string tokenized on its own), the overview's rows, overview_end, end.
  const char* begin;
  const char* end;
  const char* tile_begin;
  const char* row_end;
  std::vector<const char*> overview_begin;
  const char* overview_end;
  Vit vit = Vit::kSiglip;
  // The LM widths whose models take the rows causally although `bidirectional` (libmtmd:
  // Gemma 4 E2B / E4B, n_embd 1536 / 2560).
  std::vector<int32_t> causal_lm_widths = {};
  TileRule tiles = {};
};

// The spec of a clip.projector_type, or nullptr when it is not supported.
const ProjectorSpec* FindProjector(const std::string& type);
// Whether a language model of general.architecture `arch` is one of the spec's families.
bool ForFamily(const ProjectorSpec& spec, const std::string& arch);
// Whether the rows attend both ways in a language model of width lm_width (the spec's rule and
// its causal widths: mtmd_decode_use_non_causal).
bool RowsBidirectional(const ProjectorSpec& spec, int32_t lm_width);
// The supported types' names, comma-separated (for messages).
std::string SupportedProjectors();

// How an image is cut for the encoder: grid_x x grid_y tiles (0 x 0: one image, no overview).
// rows: an own-size image's rows (tiled: the overview's); tile_rows: each tile's (0 for either:
// the type's fixed n_tokens per encoder input).
struct TileGrid {
  int32_t x = 0, y = 0;
  int32_t w = 0, h = 0;  // own-size types: the size the image (tiled: the overview) is resized to
  int64_t rows = 0;
  int64_t tile_rows = 0;
  int32_t cols = 0;  // own-size types whose rows are exactly a grid of tokens: its columns
  int32_t n_images() const { return x * y > 0 ? x * y + 1 : 1; }  // the encoder's inputs (tiles + overview)
  // All the image's rows: the tiles' and the overview's, or the one image's.
  int64_t total_rows(int64_t n_tokens) const {
    const int64_t one = rows > 0 ? rows : n_tokens;
    return x * y > 0 ? int64_t(x) * y * (tile_rows > 0 ? tile_rows : n_tokens) + one : one;
  }
};

// A piece of an image's place in the prompt: marker text (tokenized with special tokens, no
// BOS), or (rows > 0) the next `rows` rows of the image's embeddings, row by row a grid of
// `cols` tokens when the rows are one (0: not; M-RoPE language models place rows by it).
struct LayoutPiece {
  std::string text;
  int64_t rows = 0;
  int32_t cols = 0;
};

// The pieces for an image of `grid` whose encoder inputs each give n_tokens rows.
std::vector<LayoutPiece> Layout(const ProjectorSpec& spec, const TileGrid& grid, int64_t n_tokens);

}  // namespace zf::vision
