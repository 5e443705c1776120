// Records libmtmd's image embeddings on a projector file (mmproj GGUF) for tests/vision:
//   mmproj_recorder MMPROJ.gguf TEXT_MODEL.gguf SHA256 > golden.json
// The images are tests/vision/test_images.h's Pattern pictures (handed to libmtmd as RGB
// pixels, so no decoder stands between the two sides). Per image: its size, the output's
// tokens x width, every token's L2 norm, and the full embedding of 16 tokens on the 16 x 16
// grid's diagonal (token i * 17) — the whole output would be megabytes per file — and the
// preprocessed image (libmtmd's input tensor, caught by the eval callback at the patch
// convolution's im2col and mapped back to 8-bit pixels, exactly) as an FNV-1a hash of its RGB
// bytes and the sum of each row, so that the resize is checked pixel for pixel.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "mtmd.h"
#include "test_images.h"

namespace {

struct TestImage {
  const char* name;
  int w, h;
  uint32_t seed;
};
// Landscape and portrait, neither square: both go through the resize and the padding.
const TestImage kImages[] = {{"landscape-640x400", 640, 400, 1}, {"portrait-300x700", 300, 700, 2}};

// The image tensor libmtmd fed to the encoder: im2col's source, [x][y][c] planar floats.
std::vector<float> g_inp;
int64_t g_nx = 0, g_ny = 0;

bool CatchInput(ggml_tensor* t, bool ask, void*) {
  if (ask) return t->op == GGML_OP_IM2COL;
  const ggml_tensor* src = t->src[1];
  if (src != nullptr && src->type == GGML_TYPE_F32 && src->ne[2] == 3) {
    g_nx = src->ne[0];
    g_ny = src->ne[1];
    g_inp.resize(size_t(ggml_nelements(src)));
    ggml_backend_tensor_get(src, g_inp.data(), 0, ggml_nbytes(src));
  }
  return true;
}

void Quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MMPROJ TEXT_MODEL SHA256\n", argv[0]);
    return 2;
  }
  llama_log_set(Quiet, nullptr);
  mtmd_log_set(Quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;  // the full model: libmtmd checks its width against the projector
  llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[2]);
    return 1;
  }
  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false;
  cp.n_threads = 2;
  cp.print_timings = false;
  cp.warmup = false;
  cp.cb_eval = CatchInput;
  mtmd_context* ctx = mtmd_init_from_file(argv[1], model, cp);
  if (!ctx) {
    std::fprintf(stderr, "mtmd_init_from_file refused %s\n", argv[1]);
    return 1;
  }
  std::printf("{\n  \"mmproj_sha256\": \"%s\",\n  \"reference\": \"libmtmd (llama.cpp, llama-cpp-python 0.3.36 sdist)\",\n  \"images\": [",
              argv[3]);
  bool first = true;
  for (const TestImage& ti : kImages) {
    const std::vector<uint8_t> rgb = zf::vision::test::Pattern(ti.w, ti.h, ti.seed);
    mtmd_bitmap* bmp = mtmd_bitmap_init(uint32_t(ti.w), uint32_t(ti.h), rgb.data());
    mtmd_input_chunks* chunks = mtmd_input_chunks_init();
    const std::string prompt = mtmd_default_marker();
    mtmd_input_text text{prompt.c_str(), prompt.size(), false, true};
    const mtmd_bitmap* bitmaps[] = {bmp};
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
      std::fprintf(stderr, "mtmd_tokenize failed\n");
      return 1;
    }
    const mtmd_input_chunk* img = nullptr;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i)
      if (mtmd_input_chunk_get_type(mtmd_input_chunks_get(chunks, i)) == MTMD_INPUT_CHUNK_TYPE_IMAGE)
        img = mtmd_input_chunks_get(chunks, i);
    const auto t0 = std::chrono::steady_clock::now();
    if (!img || mtmd_encode_chunk(ctx, img) != 0) {
      std::fprintf(stderr, "no image chunk, or its encoding failed\n");
      return 1;
    }
    std::fprintf(stderr, "%s: mtmd_encode_chunk %.0f ms (2 threads)\n", ti.name,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const size_t n_tok = mtmd_input_chunk_get_n_tokens(img);
    const int n_embd = llama_model_n_embd_inp(model);
    const float* e = mtmd_get_output_embd(ctx);
    std::printf("%s\n    {\"name\": \"%s\", \"width\": %d, \"height\": %d, \"seed\": %u, \"n_tokens\": %zu, \"n_embd\": %d,\n      \"norms\": [",
                first ? "" : ",", ti.name, ti.w, ti.h, ti.seed, n_tok, n_embd);
    first = false;
    for (size_t t = 0; t < n_tok; ++t) {
      double s = 0;
      for (int i = 0; i < n_embd; ++i) s += double(e[t * size_t(n_embd) + size_t(i)]) * e[t * size_t(n_embd) + size_t(i)];
      std::printf("%s%.7g", t ? ", " : "", std::sqrt(s));
    }
    // The captured input back to bytes: (u8 / 255 - mean) / std must give the floats exactly.
    const float mean = 0.5f, stdv = 0.5f;  // synth_mmproj.py's
    std::vector<uint8_t> u8(size_t(g_nx * g_ny * 3));
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < g_ny; ++y)
        for (int64_t x = 0; x < g_nx; ++x) {
          const float f = g_inp[size_t((c * g_ny + y) * g_nx + x)];
          const long b = std::lround((f * stdv + mean) * 255.0f);
          if (b < 0 || b > 255 || (float(b) / 255.0f - mean) / stdv != f) {
            std::fprintf(stderr, "input pixel %ld,%ld,%ld = %g is no normalized byte\n", long(x), long(y), long(c), f);
            return 1;
          }
          u8[size_t((y * g_nx + x) * 3 + c)] = uint8_t(b);
        }
    uint64_t fnv = 1469598103934665603ull;
    for (uint8_t b : u8) fnv = (fnv ^ b) * 1099511628211ull;
    std::printf("],\n      \"preprocessed\": {\"width\": %ld, \"height\": %ld, \"fnv1a64\": \"%016llx\", \"row_sums\": [",
                long(g_nx), long(g_ny), (unsigned long long)fnv);
    for (int64_t y = 0; y < g_ny; ++y) {
      uint64_t sum = 0;
      for (int64_t i = 0; i < g_nx * 3; ++i) sum += u8[size_t(y * g_nx * 3 + i)];
      std::printf("%s%llu", y ? ", " : "", (unsigned long long)sum);
    }
    std::printf("]},\n      \"tokens\": {");
    bool ft = true;
    for (size_t t = 0; t < n_tok; t += 17) {
      std::printf("%s\n        \"%zu\": [", ft ? "" : ",", t);
      ft = false;
      for (int i = 0; i < n_embd; ++i) std::printf("%s%.7g", i ? ", " : "", e[t * size_t(n_embd) + size_t(i)]);
      std::printf("]");
    }
    std::printf("\n      }}");
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bmp);
  }
  std::printf("\n  ]\n}\n");
  mtmd_free(ctx);
  llama_model_free(model);
  return 0;
}
