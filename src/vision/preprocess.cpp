#include "vision/preprocess.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace zf::vision {
namespace {

constexpr int kPrecisionBits = 22;  // 32 - 8 (pixel) - 2 (headroom), as Pillow

struct Taps {
  int ksize = 0;
  std::vector<int> first, count;  // per output pixel: the first input pixel and how many
  std::vector<int32_t> weights;   // per output pixel: ksize fixed-point weights
};

// Pillow's filters: the triangle (support 1), bicubic (a = -0.5, support 2) and Lanczos-3
// (support 3).
double Support(Resample f) { return f == Resample::kLanczos ? 3.0 : f == Resample::kBicubic ? 2.0 : 1.0; }

double Filter(Resample f, double x) {
  if (f == Resample::kLanczos) {
    if (!(-3.0 <= x && x < 3.0)) return 0.0;
    const auto sinc = [](double v) {
      if (v == 0.0) return 1.0;
      const double pv = v * 3.141592653589793238462643383279502884;
      return std::sin(pv) / pv;
    };
    return sinc(x) * sinc(x / 3.0);
  }
  x = std::fabs(x);
  if (f == Resample::kBicubic) {
    constexpr double a = -0.5;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    return x < 2.0 ? (((x - 5) * x + 8) * x - 4) * a : 0.0;
  }
  return x < 1.0 ? 1.0 - x : 0.0;
}

// The filter's weights for in -> out pixels along one side.
Taps ComputeTaps(int in, int out, Resample f) {
  Taps t;
  const double scale = double(in) / double(out);
  const double filterscale = std::max(scale, 1.0);  // widened when shrinking
  const double support = Support(f) * filterscale;
  t.ksize = int(std::ceil(support)) * 2 + 1;
  t.first.resize(size_t(out));
  t.count.resize(size_t(out));
  t.weights.assign(size_t(out) * size_t(t.ksize), 0);
  std::vector<double> w(size_t(t.ksize));
  for (int o = 0; o < out; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0);
    const int hi = std::min(int(center + support + 0.5), in);
    double sum = 0;
    for (int i = lo; i < hi; ++i) {
      w[size_t(i - lo)] = Filter(f, (i - center + 0.5) * (1.0 / filterscale));
      sum += w[size_t(i - lo)];
    }
    t.first[size_t(o)] = lo;
    t.count[size_t(o)] = hi - lo;
    for (int i = 0; i < hi - lo; ++i) {
      const double v = sum != 0.0 ? w[size_t(i)] / sum : w[size_t(i)];
      // Rounded half away from zero by truncation, as Pillow.
      t.weights[size_t(o) * size_t(t.ksize) + size_t(i)] = int32_t(v * double(1 << kPrecisionBits) + (v < 0 ? -0.5 : 0.5));
    }
  }
  return t;
}

inline uint8_t Clip8(int32_t acc) {
  const int32_t v = acc >> kPrecisionBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

Image Horizontal(const Image& src, int out_w, Resample f) {
  const Taps t = ComputeTaps(src.width, out_w, f);
  Image dst;
  dst.width = out_w;
  dst.height = src.height;
  dst.rgb.resize(size_t(out_w) * size_t(src.height) * 3);
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* row = src.rgb.data() + size_t(y) * size_t(src.width) * 3;
    uint8_t* out = dst.rgb.data() + size_t(y) * size_t(out_w) * 3;
    for (int o = 0; o < out_w; ++o) {
      const int32_t* k = t.weights.data() + size_t(o) * size_t(t.ksize);
      int32_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      for (int i = 0; i < t.count[size_t(o)]; ++i) {
        const uint8_t* p = row + size_t(t.first[size_t(o)] + i) * 3;
        for (int c = 0; c < 3; ++c) acc[c] += int32_t(p[c]) * k[i];
      }
      for (int c = 0; c < 3; ++c) out[size_t(o) * 3 + size_t(c)] = Clip8(acc[c]);
    }
  }
  return dst;
}

Image Vertical(const Image& src, int out_h, Resample f) {
  const Taps t = ComputeTaps(src.height, out_h, f);
  Image dst;
  dst.width = src.width;
  dst.height = out_h;
  const size_t row_bytes = size_t(src.width) * 3;
  dst.rgb.resize(row_bytes * size_t(out_h));
  std::vector<int32_t> acc(row_bytes);
  for (int o = 0; o < out_h; ++o) {
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    const int32_t* k = t.weights.data() + size_t(o) * size_t(t.ksize);
    for (int i = 0; i < t.count[size_t(o)]; ++i) {
      const uint8_t* row = src.rgb.data() + size_t(t.first[size_t(o)] + i) * row_bytes;
      for (size_t j = 0; j < row_bytes; ++j) acc[j] += int32_t(row[j]) * k[i];
    }
    uint8_t* out = dst.rgb.data() + size_t(o) * row_bytes;
    for (size_t j = 0; j < row_bytes; ++j) out[j] = Clip8(acc[j]);
  }
  return dst;
}

}  // namespace

Image Resize(const Image& src, int32_t w, int32_t h, Resample f) {
  Image cur = src;
  if (w != src.width) cur = Horizontal(cur, w, f);
  if (h != src.height) cur = Vertical(cur, h, f);
  return cur;
}

Image ResizeBilinear(const Image& src, int32_t w, int32_t h) { return Resize(src, w, h, Resample::kBilinear); }

Image FitAndPad(const Image& src, int32_t tw, int32_t th, Resample f) {
  if (src.width == tw && src.height == th) return src;
  // The scale in float and the new size rounded up, as libmtmd's PAD_CEIL resize.
  const float scale = std::min(float(tw) / float(src.width), float(th) / float(src.height));
  const int32_t nw = std::min(int32_t(std::ceil(float(src.width) * scale)), tw);
  const int32_t nh = std::min(int32_t(std::ceil(float(src.height) * scale)), th);
  const Image scaled = Resize(src, nw, nh, f);
  Image dst;
  dst.width = tw;
  dst.height = th;
  dst.rgb.assign(size_t(tw) * size_t(th) * 3, 0);
  const int32_t ox = (tw - nw) / 2, oy = (th - nh) / 2;
  for (int32_t y = 0; y < nh; ++y)
    std::copy_n(scaled.rgb.data() + size_t(y) * size_t(nw) * 3, size_t(nw) * 3,
                dst.rgb.data() + (size_t(y + oy) * size_t(tw) + size_t(ox)) * 3);
  return dst;
}

Image FitAndPad(const Image& src, int32_t size) { return FitAndPad(src, size, size, Resample::kBilinear); }

void DynamicSize(const VisionHparams& hp, int32_t width, int32_t height, int32_t* tw, int32_t* th) {
  // libmtmd's calc_size_preserved_ratio (transformers' smart_resize) without a longest edge.
  const int32_t a = hp.patch_size * hp.n_merge;
  const auto round_by = [a](float x) { return int32_t(std::round(x / float(a))) * a; };
  const auto ceil_by = [a](float x) { return int32_t(std::ceil(x / float(a))) * a; };
  const auto floor_by = [a](float x) { return int32_t(std::floor(x / float(a))) * a; };
  int32_t w = std::max(a, round_by(float(width))), h = std::max(a, round_by(float(height)));
  if (hp.max_pixels > 0 && int64_t(h) * w > hp.max_pixels) {
    const float beta = std::sqrt(float(height) * float(width) / float(hp.max_pixels));
    h = std::max(a, floor_by(float(height) / beta));
    w = std::max(a, floor_by(float(width) / beta));
  } else if (hp.min_pixels > 0 && int64_t(h) * w < hp.min_pixels) {
    const float beta = std::sqrt(float(hp.min_pixels) / (float(height) * float(width)));
    h = ceil_by(float(height) * beta);
    w = ceil_by(float(width) * beta);
  }
  *tw = w;
  *th = h;
}

int64_t DynamicRows(const VisionHparams& hp, int32_t tw, int32_t th) {
  const int64_t a = int64_t(hp.patch_size) * hp.n_merge, nx = tw / a, ny = th / a;
  // Pixtral's encoder adds an [IMG_BREAK] row after each row of tokens but the last.
  return nx * ny + (hp.spec != nullptr && hp.spec->vit == Vit::kPixtral ? ny - 1 : 0);
}

bool OverTileBudget(const VisionHparams& hp, int32_t width, int32_t height) {
  const TileRule& r = hp.spec->tiles;
  if (hp.spec->tiling != Tiling::kSmartResize || r.size <= 0) return false;
  // libmtmd's should_tile: each side rounded (half to even) to whole blocks, at least a patch.
  const int32_t a = hp.patch_size * hp.n_merge;
  const auto round_by = [a](int32_t x) { return int32_t(std::nearbyint(double(x) / a)) * a; };
  const double w = std::max(hp.patch_size, round_by(width)), h = std::max(hp.patch_size, round_by(height));
  return w * h > double(hp.max_pixels) * r.over_budget;
}

void ChooseTileGrid(const TileRule& r, int32_t width, int32_t height, int32_t* gx, int32_t* gy) {
  // The grids of min..max tiles in libmtmd's order (first seen by tile count, then columns,
  // then rows; sorted by tile count with std::sort, whose order among equal counts decides ties).
  std::vector<std::pair<int32_t, int32_t>> grids;
  for (int32_t n = r.min_tiles; n <= r.max_tiles; ++n)
    for (int32_t w = 1; w <= n; ++w)
      for (int32_t h = 1; h <= n; ++h)
        if (w * h >= r.min_tiles && w * h <= r.max_tiles && std::find(grids.begin(), grids.end(), std::make_pair(w, h)) == grids.end())
          grids.emplace_back(w, h);
  std::sort(grids.begin(), grids.end(), [](const auto& a, const auto& b) { return a.first * a.second < b.first * b.second; });
  // The closest aspect ratio in float; a tie goes to the later grid when the image covers more
  // than half of its pixels.
  const float aspect = float(width) / float(height), area = float(width * height);
  float best_diff = std::numeric_limits<float>::max();
  std::pair<int32_t, int32_t> best{1, 1};
  for (const auto& g : grids) {
    const float diff = std::fabs(aspect - float(g.first) / float(g.second));
    if (diff < best_diff) {
      best_diff = diff;
      best = g;
    } else if (diff == best_diff && area > 0.5f * float(r.size * r.size * g.first * g.second)) {
      best = g;
    }
  }
  *gx = best.first;
  *gy = best.second;
}

TileGrid PlanTiles(const VisionHparams& hp, int32_t width, int32_t height, int32_t* rw, int32_t* rh) {
  if (hp.spec != nullptr && OwnSize(hp.spec->tiling)) {
    TileGrid g;
    DynamicSize(hp, width, height, &g.w, &g.h);
    g.rows = DynamicRows(hp, g.w, g.h);
    const int32_t a = hp.patch_size * hp.n_merge;
    if (g.rows == int64_t(g.w / a) * (g.h / a)) g.cols = g.w / a;  // no break rows (Pixtral's) among them
    if (OverTileBudget(hp, width, height)) {  // g.w x g.h is then the thumbnail's size
      ChooseTileGrid(hp.spec->tiles, width, height, &g.x, &g.y);
      g.tile_rows = DynamicRows(hp, hp.spec->tiles.size, hp.spec->tiles.size);
    }
    return g;
  }
  if (hp.spec == nullptr || hp.spec->tiling != Tiling::kLongestEdge) return TileGrid{};
  // The longer side to longest_edge, the other by the aspect ratio (truncated, then made even),
  // as libmtmd's idefics3 preprocessor (after transformers' Idefics3ImageProcessor).
  const int32_t edge = hp.longest_edge, tile = hp.image_size;
  const double aspect = double(width) / double(height);
  int32_t w = edge, h = edge;
  if (width >= height) {
    h = int32_t(edge / aspect);
    h += h % 2;
  } else {
    w = int32_t(edge * aspect);
    w += w % 2;
  }
  w = std::max(w, 1);  // an extreme aspect ratio; libmtmd would resize to 0 and fail
  h = std::max(h, 1);
  if (rw != nullptr) *rw = w;
  if (rh != nullptr) *rh = h;
  return TileGrid{(w + tile - 1) / tile, (h + tile - 1) / tile};
}

namespace {

// The grid's tile x tile crops of an image of exactly grid.x x grid.y tiles, row by row.
std::vector<Image> CutTiles(const Image& refined, const TileGrid& grid, int32_t tile) {
  std::vector<Image> out;
  for (int32_t ty = 0; ty < grid.y; ++ty)
    for (int32_t tx = 0; tx < grid.x; ++tx) {
      Image t;
      t.width = t.height = tile;
      t.rgb.resize(size_t(tile) * size_t(tile) * 3);
      for (int32_t y = 0; y < tile; ++y)
        std::copy_n(refined.rgb.data() + ((size_t(ty) * size_t(tile) + size_t(y)) * size_t(refined.width) + size_t(tx) * size_t(tile)) * 3,
                    size_t(tile) * 3, t.rgb.data() + size_t(y) * size_t(tile) * 3);
      out.push_back(std::move(t));
    }
  return out;
}

}  // namespace

std::vector<Image> TileImages(const VisionHparams& hp, const Image& src, TileGrid* grid) {
  if (hp.spec != nullptr && OwnSize(hp.spec->tiling)) {
    const Resample f = hp.spec->resample;
    *grid = PlanTiles(hp, src.width, src.height);
    if (grid->x * grid->y > 0) {
      // libmtmd's lfm2 tiles: the whole image fitted into the grid (PAD_CEIL, centred on black),
      // cut; then the thumbnail, the one-image resize of the original (no border), last.
      const int32_t t = hp.spec->tiles.size;
      std::vector<Image> out = CutTiles(FitAndPad(src, grid->x * t, grid->y * t, f), *grid, t);
      out.push_back(Resize(src, grid->w, grid->h, f));
      return out;
    }
    if (hp.spec->tiling == Tiling::kSmartResize) return {Resize(src, grid->w, grid->h, f)};
    return {FitAndPad(src, grid->w, grid->h, f)};
  }
  if (hp.spec == nullptr || hp.spec->tiling != Tiling::kLongestEdge) {
    *grid = TileGrid{};
    return {FitAndPad(src, hp.image_size)};
  }
  const Resample f = hp.spec->resample;
  int32_t w = 0, h = 0;
  *grid = PlanTiles(hp, src.width, src.height, &w, &h);
  const int32_t tile = hp.image_size;
  // Two resizes, as the reference: to the aspect-kept size, then stretched to whole tiles.
  const Image refined = Resize(Resize(src, w, h, f), grid->x * tile, grid->y * tile, f);
  std::vector<Image> out = CutTiles(refined, *grid, tile);
  out.push_back(Resize(refined, tile, tile, f));  // the overview, last as libmtmd places it
  return out;
}

std::vector<float> Normalize(const Image& img, const std::array<float, 3>& mean, const std::array<float, 3>& std) {
  std::vector<float> out(img.rgb.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t c = i % 3;
    out[i] = (float(img.rgb[i]) / 255.0f - mean[c]) / std[c];
  }
  return out;
}

std::vector<float> PreprocessFixedSize(const Image& src, int32_t size, const std::array<float, 3>& mean,
                                       const std::array<float, 3>& std) {
  return Normalize(FitAndPad(src, size), mean, std);
}

}  // namespace zf::vision
