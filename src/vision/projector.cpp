#include "vision/projector.h"

#include <algorithm>
#include <cstdio>

namespace zf::vision {
namespace {

// libmtmd's choices (tools/mtmd/mtmd.cpp, clip.cpp) per type.
const ProjectorSpec kSpecs[] = {
    {"gemma3", "gemma3", Merge::kAvgPool, true, "mm.input_projection", true, Tiling::kFitAndPad, Resample::kBilinear, true,
     "<start_of_image>", "<end_of_image>", "", "", {}, ""},
    // SmolVLM: causal rows; the tiles' markers are idefics3's processor's (parsed as special text),
    // the overview's looked up token by token.
    {"idefics3", "llama", Merge::kPixelShuffle, false, "mm.model.fc", false, Tiling::kLongestEdge, Resample::kLanczos,
     false, "", "", "<fake_token_around_image><row_%d_col_%d>", "\n",
     {"\n\n", "<fake_token_around_image>", "<global-img>"}, "<fake_token_around_image>"},
    // Pixtral 12B (its LM is written as llama) and Mistral Small 3.1 / 3.2 (mistral3): [IMG_BREAK]
    // rows are in the encoder's output (v.token_embd.img_break), only [IMG_END] is text; causal.
    {"pixtral", "llama, mistral3", Merge::kPatchMerger, false, "mm.2", false, Tiling::kDynamic, Resample::kBicubic, false, "",
     "[IMG_END]", "", "", {}, "", Vit::kPixtral},
    // Gemma 4: one image of its own size (bicubic), a 2D-rotary ViT, average pooling, then the
    // projection; both ways in the LM except on E2B / E4B (mtmd_decode_use_non_causal).
    {"gemma4v", "gemma4", Merge::kAvgPool, false, "mm.input_projection", false, Tiling::kDynamic, Resample::kBicubic,
     true, "<|image>", "<image|>", "", "", {}, "", Vit::kGemma4v, {1536, 2560}},
    // Qwen2.5-VL: one image of its own size (bicubic), 2 x 2 blocks concatenated into the
    // mm.0 / GELU / mm.2 merger (vision/qwen_vl.cpp); causal rows between the vision markers.
    {"qwen2.5vl_merger", "qwen2vl", Merge::kPixelShuffle, false, "mm.2", false, Tiling::kDynamic, Resample::kBicubic, false,
     "<|vision_start|>", "<|vision_end|>", "", "", {}, "", Vit::kQwen25vl},
    // Qwen3-VL: Qwen2.5-VL's tiling and markers; its rows carry the deepstack features after
    // the main ones (n_embd x (1 + deepstack mergers) floats, vision/qwen_vl.h). Qwen 3.5's
    // files (dense and MoE) are the same type without deepstack (libmtmd's converter).
    {"qwen3vl_merger", "qwen3vl, qwen35, qwen35moe", Merge::kPixelShuffle, false, "mm.2", false, Tiling::kDynamic, Resample::kBicubic, false,
     "<|vision_start|>", "<|vision_end|>", "", "", {}, "", Vit::kQwen3vl},
    // LFM2-VL: one image of its own size (bilinear, no border), SigLIP, 2 x 2 pixel unshuffle,
    // LayerNorm + mm.1 / GELU / mm.2 (vision/lfm2_vl.cpp); causal rows between the markers. Over
    // twice the pixel budget: 2..10 tiles of 512 px, each after its <|img_row_R_col_C|>, then
    // the one-image resize as the thumbnail (processor_config.json's values, as libmtmd).
    {"lfm2", "lfm2", Merge::kPixelShuffle, false, "mm.2", false, Tiling::kSmartResize, Resample::kBilinear, false,
     "<|image_start|>", "<|image_end|>", "<|img_row_%d_col_%d|>", "", {"<|img_thumbnail|>"}, "", Vit::kLfm2, {},
     TileRule{512, 2, 10, 2.0}},
};

}  // namespace

const ProjectorSpec* FindProjector(const std::string& type) {
  for (const ProjectorSpec& s : kSpecs)
    if (type == s.type) return &s;
  return nullptr;
}

bool ForFamily(const ProjectorSpec& spec, const std::string& arch) {
  const std::string families = spec.family;
  for (size_t at = 0; at <= families.size();) {
    const size_t end = std::min(families.find(", ", at), families.size());
    if (families.compare(at, end - at, arch) == 0) return true;
    at = end + 2;
  }
  return false;
}

bool RowsBidirectional(const ProjectorSpec& spec, int32_t lm_width) {
  const std::vector<int32_t>& c = spec.causal_lm_widths;
  return spec.bidirectional && std::find(c.begin(), c.end(), lm_width) == c.end();
}

std::string SupportedProjectors() {
  std::string s;
  for (const ProjectorSpec& p : kSpecs) s += (s.empty() ? "" : ", ") + std::string(p.type);
  return s;
}

std::vector<LayoutPiece> Layout(const ProjectorSpec& spec, const TileGrid& grid, int64_t n_tokens) {
  std::vector<LayoutPiece> out;
  const auto text = [&out](const std::string& t) {
    if (!t.empty()) out.push_back(LayoutPiece{t, 0});
  };
  const int64_t one = grid.rows > 0 ? grid.rows : n_tokens;
  text(spec.begin);
  if (grid.x * grid.y == 0) {
    out.push_back(LayoutPiece{"", one, grid.cols});
    text(spec.end);
    return out;
  }
  for (int32_t y = 0; y < grid.y; ++y) {
    for (int32_t x = 0; x < grid.x; ++x) {
      char buf[96];
      std::snprintf(buf, sizeof buf, spec.tile_begin, y + 1, x + 1);
      text(buf);
      out.push_back(LayoutPiece{"", grid.tile_rows > 0 ? grid.tile_rows : n_tokens});
    }
    if (y + 1 < grid.y) text(spec.row_end);
  }
  for (const char* t : spec.overview_begin) text(t);
  out.push_back(LayoutPiece{"", one});
  text(spec.overview_end);
  text(spec.end);
  return out;
}

}  // namespace zf::vision
