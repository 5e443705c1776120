// Records libmtmd's audio embeddings on an audio projector file (mmproj GGUF) for
// tests/mmproj_audio and tests/capi (issue #46):
//   audio_recorder --decode MMPROJ TEXT_MODEL IN.mp3 SECONDS OUT.wav
//       decodes IN (libmtmd's helper: miniaudio, resampled to 16 kHz mono), keeps the first
//       SECONDS and writes them as 16-bit PCM WAV (the test clip; both sides read these samples)
//   audio_recorder MMPROJ TEXT_MODEL SHA256 CLIP.wav > golden.json
//       per clip: its samples, the log-mel libmtmd fed the encoder (caught by the eval callback
//       at the first convolution's im2col, or at gemma4a's transpose of it: each bin's sum over
//       the chunk's frames and every bin of frames 0, 37, 300 and the last one, those the chunk
//       has), the output's tokens x width, every token's L2 norm and the full rows of every 25th
//       token (every 125th past 1000 tokens)
//   audio_recorder MMPROJ TEXT_MODEL SHA256 CLIP.wav --lm | --lm-gemma4 > golden-lm.json
//       the clip in a ChatML (Gemma 4) prompt: mtmd_tokenize, mtmd_helper_eval_chunks, 8 greedy
//       steps.
// The WAV is read here as zf_wav_decode reads it (int16 / 32768), so no decoder stands between.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

namespace {

std::vector<std::vector<float>> g_mels;  // one [n_mel][frames] per encoded chunk
std::vector<int64_t> g_nxs;              // each one's frames
int64_t g_nx = 0, g_ny = 0;

// The graph's input: the im2col's (Whisper encoders) or the view gemma4a transposes.
const ggml_tensor* MelInput(const ggml_tensor* t) {
  if (t->op == GGML_OP_IM2COL) return t->src[1];
  if (t->op == GGML_OP_CONT && t->src[0] != nullptr && t->src[0]->op == GGML_OP_TRANSPOSE) return t->src[0]->view_src;
  return nullptr;
}

bool CatchMel(ggml_tensor* t, bool ask, void*) {
  if (ask) return MelInput(t) != nullptr;
  const ggml_tensor* src = MelInput(t);
  if (src != nullptr && src->type == GGML_TYPE_F32 && std::string(src->name) == "inp_raw") {
    g_nx = src->ne[0];
    g_ny = src->ne[1];
    std::vector<float> m(size_t(ggml_nelements(src)));
    ggml_backend_tensor_get(src, m.data(), 0, ggml_nbytes(src));
    g_mels.push_back(std::move(m));
    g_nxs.push_back(g_nx);
  }
  return true;
}

void Quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

void Put16(FILE* f, uint16_t v) { std::fwrite(&v, 2, 1, f); }
void Put32(FILE* f, uint32_t v) { std::fwrite(&v, 4, 1, f); }

bool WriteWav(const char* path, const std::vector<int16_t>& s) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  const uint32_t data = uint32_t(s.size() * 2);
  std::fwrite("RIFF", 1, 4, f);
  Put32(f, 36 + data);
  std::fwrite("WAVEfmt ", 1, 8, f);
  Put32(f, 16);
  Put16(f, 1);
  Put16(f, 1);
  Put32(f, 16000);
  Put32(f, 32000);
  Put16(f, 2);
  Put16(f, 16);
  std::fwrite("data", 1, 4, f);
  Put32(f, data);
  std::fwrite(s.data(), 2, s.size(), f);
  return std::fclose(f) == 0;
}

// A 16 kHz mono 16-bit WAV as written above (44-byte header), as floats int16 / 32768.
bool ReadWav(const char* path, std::vector<float>* out) {
  FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  std::vector<uint8_t> b;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  std::fclose(f);
  if (b.size() < 44 || std::memcmp(b.data(), "RIFF", 4) != 0) return false;
  out->clear();
  for (size_t i = 44; i + 1 < b.size(); i += 2) {
    int16_t v;
    std::memcpy(&v, b.data() + i, 2);
    out->push_back(float(v) / 32768.0f);
  }
  return true;
}

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

const char* kPrompt = "<|im_start|>user\nWhat do you hear?<__media__><|im_end|>\n<|im_start|>assistant\n";
const char* kGemma4Prompt = "<|turn>user\nWhat do you hear?<__media__><turn|>\n<|turn>model\n";

int RecordLm(llama_model* model, mtmd_context* ctx, const char* sha, const char* wav, const std::vector<float>& pcm,
             const char* prompt_text) {
  llama_context_params lp = llama_context_default_params();
  lp.n_ctx = 2048;
  lp.n_batch = 1024;
  lp.n_ubatch = 1024;
  lp.n_threads = lp.n_threads_batch = 2;
  llama_context* lctx = llama_init_from_model(model, lp);
  if (!lctx) return 1;
  mtmd_bitmap* bmp = mtmd_bitmap_init_from_audio(pcm.size(), pcm.data());
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const std::string prompt = prompt_text;
  mtmd_input_text text{prompt.c_str(), prompt.size(), true, true};
  const mtmd_bitmap* bitmaps[] = {bmp};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
    std::fprintf(stderr, "mtmd_tokenize failed\n");
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 1024, true, &n_past) != 0) {
    std::fprintf(stderr, "mtmd_helper_eval_chunks failed\n");
    return 1;
  }
  std::fprintf(stderr, "prompt with the clip evaluated in %.0f ms (2 threads), n_past %d\n",
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), int(n_past));
  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::string quoted;
  for (char c : prompt) quoted += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::printf("{\n  \"mmproj_sha256\": \"%s\",\n  \"reference\": \"libmtmd + llama.cpp (llama-cpp-python 0.3.36 sdist): "
              "mtmd_tokenize, mtmd_helper_eval_chunks, llama_decode\",\n  \"clip\": \"%s\",\n  \"n_samples\": %zu,\n"
              "  \"prompt\": \"%s\",\n  \"n_past\": %d,\n  \"chunks\": [",
              sha, wav, pcm.size(), quoted.c_str(), int(n_past));
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    std::printf("%s\n    {", i ? "," : "");
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
      PrintIds("text", std::vector<int32_t>(t, t + n));
    } else {
      std::printf("\"audio_tokens\": %zu", mtmd_input_chunk_get_n_tokens(c));
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
    if (llama_decode(lctx, llama_batch_get_one(&tok, 1)) != 0) return 1;
    l = llama_get_logits_ith(lctx, -1);
  }
  std::printf("\n  ]\n}\n");
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp);
  llama_free(lctx);
  return 0;
}

int RecordEmbd(llama_model* model, mtmd_context* ctx, const char* sha, const char* wav, const std::vector<float>& pcm) {
  mtmd_bitmap* bmp = mtmd_bitmap_init_from_audio(pcm.size(), pcm.data());
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const std::string prompt = mtmd_default_marker();
  mtmd_input_text text{prompt.c_str(), prompt.size(), false, true};
  const mtmd_bitmap* bitmaps[] = {bmp};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
    std::fprintf(stderr, "mtmd_tokenize failed\n");
    return 1;
  }
  const int n_embd = llama_model_n_embd_inp(model);
  std::vector<float> all;
  size_t n_tok = 0;
  double ms = 0;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_AUDIO) continue;
    const auto t0 = std::chrono::steady_clock::now();
    if (mtmd_encode_chunk(ctx, c) != 0) {
      std::fprintf(stderr, "mtmd_encode_chunk failed\n");
      return 1;
    }
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const size_t n = mtmd_input_chunk_get_n_tokens(c);
    const float* e = mtmd_get_output_embd(ctx);
    all.insert(all.end(), e, e + n * size_t(n_embd));
    n_tok += n;
  }
  std::fprintf(stderr, "%s: mtmd_encode_chunk %.0f ms in all (2 threads)\n", wav, ms);
  std::printf("{\n  \"mmproj_sha256\": \"%s\",\n  \"reference\": \"libmtmd (llama.cpp, llama-cpp-python 0.3.36 sdist)\",\n"
              "  \"clip\": \"%s\",\n  \"n_samples\": %zu,\n  \"n_chunks\": %zu,\n  \"n_tokens\": %zu,\n  \"n_embd\": %d,\n"
              "  \"mel\": {\"n_mel\": %ld, \"n_frames\": %ld, \"chunks\": [",
              sha, wav, pcm.size(), g_mels.size(), n_tok, n_embd, long(g_ny), long(g_nx));
  for (size_t c = 0; c < g_mels.size(); ++c) {
    const std::vector<float>& m = g_mels[c];
    const int64_t nx = g_nxs[c];  // this chunk's frames
    std::printf("%s\n    {\"n_frames\": %ld, \"bin_sums\": [", c ? "," : "", long(nx));
    for (int64_t b = 0; b < g_ny; ++b) {
      double s = 0;
      for (int64_t x = 0; x < nx; ++x) s += m[size_t(b * nx + x)];
      std::printf("%s%.9g", b ? ", " : "", s);
    }
    std::printf("], \"frames\": {");
    std::vector<int64_t> frames;
    for (int64_t f : {int64_t(0), int64_t(37), int64_t(300), nx - 1})
      if (f < nx && (frames.empty() || frames.back() < f)) frames.push_back(f);
    for (size_t k = 0; k < frames.size(); ++k) {
      std::printf("%s\"%ld\": [", k ? ", " : "", long(frames[k]));
      for (int64_t b = 0; b < g_ny; ++b) std::printf("%s%.9g", b ? ", " : "", m[size_t(b * nx + frames[k])]);
      std::printf("]");
    }
    std::printf("}}");
  }
  std::printf("]},\n  \"norms\": [");
  for (size_t t = 0; t < n_tok; ++t) {
    double s = 0;
    for (int i = 0; i < n_embd; ++i) s += double(all[t * size_t(n_embd) + size_t(i)]) * all[t * size_t(n_embd) + size_t(i)];
    std::printf("%s%.7g", t ? ", " : "", std::sqrt(s));
  }
  std::printf("],\n  \"tokens\": {");
  const size_t stride = n_tok > 1000 ? 125 : 25;  // a long clip's golden stays small
  for (size_t t = 0; t < n_tok; t += stride) {
    std::printf("%s\n    \"%zu\": [", t ? "," : "", t);
    for (int i = 0; i < n_embd; ++i) std::printf("%s%.7g", i ? ", " : "", all[t * size_t(n_embd) + size_t(i)]);
    std::printf("]");
  }
  std::printf("\n  }\n}\n");
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool decode = argc == 7 && std::string(argv[1]) == "--decode";
  const bool lm = argc == 6 && (std::string(argv[5]) == "--lm" || std::string(argv[5]) == "--lm-gemma4");
  if (!decode && argc != 5 && !lm) {
    std::fprintf(stderr, "usage: %s MMPROJ TEXT_MODEL SHA256 CLIP.wav [--lm | --lm-gemma4]\n"
                         "       %s --decode MMPROJ TEXT_MODEL IN.mp3 SECONDS OUT.wav\n", argv[0], argv[0]);
    return 2;
  }
  const int a = decode ? 2 : 1;
  llama_log_set(Quiet, nullptr);
  mtmd_log_set(Quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[a + 1], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[a + 1]);
    return 1;
  }
  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false;
  cp.n_threads = 2;
  cp.print_timings = false;
  cp.warmup = false;
  cp.cb_eval = CatchMel;
  mtmd_context* ctx = mtmd_init_from_file(argv[a], model, cp);
  if (!ctx) {
    std::fprintf(stderr, "mtmd_init_from_file refused %s\n", argv[a]);
    return 1;
  }
  int rc = 0;
  if (decode) {
    mtmd_helper_bitmap_wrapper w = mtmd_helper_bitmap_init_from_file(ctx, argv[4], false, mtmd_helper_init_opt_default());
    if (!w.bitmap || !mtmd_bitmap_is_audio(w.bitmap)) {
      std::fprintf(stderr, "cannot decode %s as audio\n", argv[4]);
      return 1;
    }
    const size_t n = mtmd_bitmap_get_n_bytes(w.bitmap) / sizeof(float);
    const auto* f = reinterpret_cast<const float*>(mtmd_bitmap_get_data(w.bitmap));
    const size_t keep = std::min(n, size_t(std::atof(argv[5]) * 16000));
    std::vector<int16_t> s(keep);
    for (size_t i = 0; i < keep; ++i) s[i] = int16_t(std::lround(std::clamp(f[i], -1.0f, 32767.0f / 32768.0f) * 32768.0f));
    if (!WriteWav(argv[6], s)) return 1;
    std::fprintf(stderr, "%s: %zu of %zu samples (16 kHz)\n", argv[6], keep, n);
    mtmd_bitmap_free(w.bitmap);
  } else {
    std::vector<float> pcm;
    if (!ReadWav(argv[4], &pcm)) {
      std::fprintf(stderr, "cannot read %s\n", argv[4]);
      return 1;
    }
    const char* base = std::strrchr(argv[4], '/');
    base = base ? base + 1 : argv[4];
    const char* prompt = lm && std::string(argv[5]) == "--lm-gemma4" ? kGemma4Prompt : kPrompt;
    rc = lm ? RecordLm(model, ctx, argv[3], base, pcm, prompt) : RecordEmbd(model, ctx, argv[3], base, pcm);
  }
  mtmd_free(ctx);
  llama_model_free(model);
  return rc;
}
