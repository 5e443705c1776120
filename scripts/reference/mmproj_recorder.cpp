// Records libmtmd's image embeddings on a projector file (mmproj GGUF) for tests/vision:
//   mmproj_recorder MMPROJ.gguf TEXT_MODEL.gguf SHA256 > golden.json
// and with --lm what the language model makes of a prompt with an image (the placement):
//   mmproj_recorder MMPROJ.gguf TEXT_MODEL.gguf SHA256 --lm > golden-lm.json
// (see RecordLm; --lm-chatml: the prompt in ChatML, SmolLM2's format; --lm-gemma4: Gemma 4's;
// a last argument WxH puts a W x H Pattern picture, seed 3, in the prompt instead), and for a
// tiling projector (idefics3, lfm2) every tile's embeddings and preprocessed pixels:
//   mmproj_recorder MMPROJ.gguf TEXT_MODEL.gguf SHA256 --tiles IMAGE_FILE|WxH > golden.json
// (see RecordTiles; WxH: a W x H Pattern picture, seed 3, instead of a file).
// The images are tests/vision/test_images.h's Pattern pictures (handed to libmtmd as RGB
// pixels, so no decoder stands between the two sides). Per image: its size, the output's
// tokens x width, every token's L2 norm, and the full embedding of 16 tokens on the 16 x 16
// grid's diagonal (token i * 17) — the whole output would be megabytes per file — and the
// preprocessed image (libmtmd's input tensor, caught by the eval callback at the patch
// convolution's im2col and mapped back to 8-bit pixels, exactly) as an FNV-1a hash of its RGB
// bytes and the sum of each row, so that the resize is checked pixel for pixel.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "mtmd-helper.h"
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

// A "WxH" argument as a Pattern picture of that size (seed 3, named pattern-WxH); false when the
// argument is no such size (a file name).
bool PatternArg(const char* arg, TestImage* ti, std::string* name) {
  int w = 0, h = 0;
  char tail = 0;
  if (std::sscanf(arg, "%dx%d%c", &w, &h, &tail) != 2 || w <= 0 || h <= 0) return false;
  *name = std::string("pattern-") + arg;
  *ti = TestImage{name->c_str(), w, h, 3};
  return true;
}

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

// The captured input back to bytes ((u8 / 255 - mean) / std must give the floats exactly),
// printed as "preprocessed": its size, FNV-1a hash and row sums (the object left open after the
// row sums' "]"). False when a pixel is no normalized byte.
bool PrintPreprocessed() {
  const float mean = 0.5f, stdv = 0.5f;  // synth_mmproj.py's
  std::vector<uint8_t> u8(size_t(g_nx * g_ny * 3));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < g_ny; ++y)
      for (int64_t x = 0; x < g_nx; ++x) {
        const float f = g_inp[size_t((c * g_ny + y) * g_nx + x)];
        const long b = std::lround((f * stdv + mean) * 255.0f);
        if (b < 0 || b > 255 || (float(b) / 255.0f - mean) / stdv != f) {
          std::fprintf(stderr, "input pixel %ld,%ld,%ld = %g is no normalized byte\n", long(x), long(y), long(c), f);
          return false;
        }
        u8[size_t((y * g_nx + x) * 3 + c)] = uint8_t(b);
      }
  uint64_t fnv = 1469598103934665603ull;
  for (uint8_t b : u8) fnv = (fnv ^ b) * 1099511628211ull;
  std::printf("\"preprocessed\": {\"width\": %ld, \"height\": %ld, \"fnv1a64\": \"%016llx\", \"row_sums\": [",
              long(g_nx), long(g_ny), (unsigned long long)fnv);
  for (int64_t y = 0; y < g_ny; ++y) {
    uint64_t sum = 0;
    for (int64_t i = 0; i < g_nx * 3; ++i) sum += u8[size_t(y * g_nx * 3 + i)];
    std::printf("%s%llu", y ? ", " : "", (unsigned long long)sum);
  }
  std::printf("]");
  return true;
}

// The top k ids of n logits, largest first.
std::vector<int32_t> TopK(const float* l, int32_t n, int32_t k) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [l](int32_t a, int32_t b) { return l[a] > l[b]; });
  ids.resize(size_t(k));
  return ids;
}

void PrintIds(const char* key, const std::vector<int32_t>& ids) {
  std::printf("\"%s\": [", key);
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? ", " : "", ids[i]);
  std::printf("]");
}

// The placement golden: the landscape Pattern image in a Gemma 3 chat prompt, tokenized by
// mtmd_tokenize (BOS added; the marker expanded to <start_of_image>, the image, <end_of_image>)
// and evaluated by mtmd_helper_eval_chunks (the image chunk in one batch with causal attention
// off, as libmtmd does for gemma3), then 8 greedy tokens by llama_decode. Written: the text
// chunks' token ids, the first step's logits at every 64th id and at its top 32, and per greedy
// step the token and the top 5 (ids, logits).
int RecordLm(llama_model* model, mtmd_context* ctx, const char* sha, const std::string& format, const char* size) {
  TestImage ti = kImages[0];
  std::string pattern_name;
  if (size != nullptr && !PatternArg(size, &ti, &pattern_name)) {
    std::fprintf(stderr, "%s is no WxH size\n", size);
    return 2;
  }
  llama_context_params lp = llama_context_default_params();
  lp.n_ctx = size != nullptr ? 4096 : 1024;  // a tiled picture's rows need more than 1024
  lp.n_batch = 512;
  lp.n_ubatch = 512;
  lp.n_threads = lp.n_threads_batch = 2;
  llama_context* lctx = llama_init_from_model(model, lp);
  if (!lctx) {
    std::fprintf(stderr, "llama_init_from_model failed\n");
    return 1;
  }
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(ti.w, ti.h, ti.seed);
  mtmd_bitmap* bmp = mtmd_bitmap_init(uint32_t(ti.w), uint32_t(ti.h), rgb.data());
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  // Gemma 3's chat format, or ChatML (SmolLM2's) for --lm-chatml.
  const std::string prompt =
      format == "--lm-chatml"    ? std::string("<|im_start|>user\nDescribe the picture.") + mtmd_default_marker() +
                                       "<|im_end|>\n<|im_start|>assistant\n"
      : format == "--lm-gemma4" ? std::string("<|turn>user\nDescribe the picture.") + mtmd_default_marker() +
                                       "<turn|>\n<|turn>model\n"
                                 : std::string("<start_of_turn>user\nDescribe the picture.") + mtmd_default_marker() +
                                       "<end_of_turn>\n<start_of_turn>model\n";
  mtmd_input_text text{prompt.c_str(), prompt.size(), true, true};
  const mtmd_bitmap* bitmaps[] = {bmp};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
    std::fprintf(stderr, "mtmd_tokenize failed\n");
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 512, true, &n_past) != 0) {
    std::fprintf(stderr, "mtmd_helper_eval_chunks failed\n");
    return 1;
  }
  std::fprintf(stderr, "%s: prompt with the image evaluated in %.0f ms (2 threads), n_past %d\n", ti.name,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), int(n_past));
  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::printf("{\n  \"mmproj_sha256\": \"%s\",\n  \"reference\": \"libmtmd + llama.cpp (llama-cpp-python 0.3.36 sdist): "
              "mtmd_tokenize, mtmd_helper_eval_chunks, llama_decode\",\n  \"image\": {\"name\": \"%s\", \"width\": %d, "
              "\"height\": %d, \"seed\": %u},\n  \"prompt\": ",
              sha, ti.name, ti.w, ti.h, ti.seed);
  std::string quoted;
  for (char c : prompt) quoted += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::printf("\"%s\",\n  \"n_past\": %d,\n  \"chunks\": [", quoted.c_str(), int(n_past));
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    std::printf("%s\n    {", i ? "," : "");
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
      PrintIds("text", std::vector<int32_t>(t, t + n));
    } else {
      std::printf("\"image_tokens\": %zu", mtmd_input_chunk_get_n_tokens(c));
      // The positions it takes (max(nx, ny) under M-RoPE) and its grid of tokens.
      const mtmd_image_tokens* it = mtmd_input_chunk_get_tokens_image(c);
      if (it != nullptr) {
        std::printf(", \"n_pos\": %d, \"nx\": %zu, \"ny\": %zu", int(mtmd_input_chunk_get_n_pos(c)),
                    mtmd_image_tokens_get_nx(it), mtmd_image_tokens_get_ny(it));
      }
    }
    std::printf("}");
  }
  const float* l = llama_get_logits_ith(lctx, -1);
  std::printf("\n  ],\n  \"first\": {\"every64\": [");
  for (int32_t i = 0; i < n_vocab; i += 64) std::printf("%s%.6g", i ? ", " : "", l[i]);
  const std::vector<int32_t> top = TopK(l, n_vocab, 32);
  std::printf("],\n    ");
  PrintIds("top_ids", top);
  std::printf(",\n    \"top_logits\": [");
  for (size_t i = 0; i < top.size(); ++i) std::printf("%s%.6g", i ? ", " : "", l[top[i]]);
  std::printf("]},\n  \"greedy\": [");
  for (int step = 0; step < 8; ++step) {
    const std::vector<int32_t> t5 = TopK(l, n_vocab, 5);
    std::printf("%s\n    {\"token\": %d, ", step ? "," : "", t5[0]);
    PrintIds("top_ids", t5);
    std::printf(", \"top_logits\": [");
    for (size_t i = 0; i < t5.size(); ++i) std::printf("%s%.6g", i ? ", " : "", l[t5[i]]);
    std::printf("]}");
    llama_token tok = t5[0];
    if (llama_decode(lctx, llama_batch_get_one(&tok, 1)) != 0) {
      std::fprintf(stderr, "llama_decode failed\n");
      return 1;
    }
    l = llama_get_logits_ith(lctx, -1);
  }
  std::printf("\n  ]\n}\n");
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp);
  llama_free(lctx);
  return 0;
}

// The tiling golden (--tiles IMAGE_FILE|WxH): for the Pattern pictures and IMAGE_FILE (decoded by
// mtmd_helper_bitmap_init_from_file, or a WxH Pattern picture; the hash of its RGB bytes written), the chunks
// mtmd_tokenize makes of the marker alone: text chunks' token ids, and per image chunk (a tile
// or the overview) its n_tokens, every token's norm, the preprocessed tile (hash and row
// sums) and four tokens' full vectors (0, 21, 42, 63).
int RecordTiles(llama_model* model, mtmd_context* ctx, const char* sha, const char* file) {
  std::printf("{\n  \"mmproj_sha256\": \"%s\",\n  \"reference\": \"libmtmd (llama.cpp, llama-cpp-python 0.3.36 sdist): "
              "mtmd_tokenize, mtmd_encode_chunk per chunk\",\n  \"images\": [",
              sha);
  const int n_embd = llama_model_n_embd_inp(model);
  for (int k = 0; k < 3; ++k) {
    mtmd_bitmap* bmp = nullptr;
    std::string name;
    uint32_t seed = 0;
    TestImage ti{};
    std::string pattern_name;
    if (k < 2 || PatternArg(file, &ti, &pattern_name)) {
      if (k < 2) ti = kImages[k];
      const std::vector<uint8_t> rgb = zf::vision::test::Pattern(ti.w, ti.h, ti.seed);
      bmp = mtmd_bitmap_init(uint32_t(ti.w), uint32_t(ti.h), rgb.data());
      name = ti.name;
      seed = ti.seed;
    } else {
      bmp = mtmd_helper_bitmap_init_from_file(ctx, file, false, mtmd_helper_init_opt_default()).bitmap;
      if (!bmp) {
        std::fprintf(stderr, "cannot read %s\n", file);
        return 1;
      }
      name = "file";
    }
    uint64_t fnv = 1469598103934665603ull;
    const unsigned char* px = mtmd_bitmap_get_data(bmp);
    for (size_t i = 0; i < mtmd_bitmap_get_n_bytes(bmp); ++i) fnv = (fnv ^ px[i]) * 1099511628211ull;
    std::printf("%s\n    {\"name\": \"%s\", \"width\": %u, \"height\": %u, \"seed\": %u, \"rgb_fnv1a64\": \"%016llx\", "
                "\"n_embd\": %d,\n      \"chunks\": [",
                k ? "," : "", name.c_str(), mtmd_bitmap_get_nx(bmp), mtmd_bitmap_get_ny(bmp), seed, (unsigned long long)fnv,
                n_embd);
    mtmd_input_chunks* chunks = mtmd_input_chunks_init();
    const std::string prompt = mtmd_default_marker();
    mtmd_input_text text{prompt.c_str(), prompt.size(), false, true};
    const mtmd_bitmap* bitmaps[] = {bmp};
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
      std::fprintf(stderr, "mtmd_tokenize failed\n");
      return 1;
    }
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
      const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
      std::printf("%s\n        {", i ? "," : "");
      if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
        size_t n = 0;
        const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
        PrintIds("text", std::vector<int32_t>(t, t + n));
        std::printf("}");
        continue;
      }
      if (mtmd_encode_chunk(ctx, c) != 0) {
        std::fprintf(stderr, "mtmd_encode_chunk failed\n");
        return 1;
      }
      const size_t n_tok = mtmd_input_chunk_get_n_tokens(c);
      const float* e = mtmd_get_output_embd(ctx);
      std::printf("\"n_tokens\": %zu, \"norms\": [", n_tok);
      for (size_t t = 0; t < n_tok; ++t) {
        double sq = 0;
        for (int j = 0; j < n_embd; ++j) sq += double(e[t * size_t(n_embd) + size_t(j)]) * e[t * size_t(n_embd) + size_t(j)];
        std::printf("%s%.7g", t ? ", " : "", std::sqrt(sq));
      }
      std::printf("],\n          ");
      if (!PrintPreprocessed()) return 1;
      std::printf("},\n          \"tokens\": {");
      for (size_t t = 0; t < n_tok; t += 21) {
        std::printf("%s\"%zu\": [", t ? ", " : "", t);
        for (int j = 0; j < n_embd; ++j) std::printf("%s%.7g", j ? ", " : "", e[t * size_t(n_embd) + size_t(j)]);
        std::printf("]");
      }
      std::printf("}}");
    }
    std::printf("\n      ]}");
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bmp);
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 5 ? argv[4] : "";
  const bool lm = (argc == 5 || argc == 6) && (mode == "--lm" || mode == "--lm-chatml" || mode == "--lm-gemma4");
  const bool tiles = argc == 6 && mode == "--tiles";
  if (argc != 4 && !lm && !tiles) {
    std::fprintf(stderr, "usage: %s MMPROJ TEXT_MODEL SHA256 [--lm | --lm-chatml | --lm-gemma4 [WxH] | --tiles IMAGE_FILE|WxH]\n",
                 argv[0]);
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
  if (lm || tiles) {
    const int rc = lm ? RecordLm(model, ctx, argv[3], mode, argc == 6 ? argv[5] : nullptr) : RecordTiles(model, ctx, argv[3], argv[5]);
    mtmd_free(ctx);
    llama_model_free(model);
    return rc;
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
    std::printf("],\n      ");
    if (!PrintPreprocessed()) return 1;
    std::printf("}");
    std::printf(",\n      \"tokens\": {");
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
