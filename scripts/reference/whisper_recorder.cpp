// Records whisper.cpp's (the reference's) numbers for one model and one 16 kHz mono PCM16 WAV, as
// JSON on stdout, for tests/speech. Built and run by whisper_record_goldens.sh against the
// whisper.cpp 1.8.5 vendored in pywhispercpp's sdist; not part of zerfoo.
//
//   whisper_recorder MODEL.bin AUDIO.wav THREADS > golden.json
//   whisper_recorder MODEL.bin AUDIO.wav THREADS decoding > decoding.json
//   whisper_recorder MODEL.bin AUDIO.wav THREADS lang > lang.json
//
// "decoding": whisper_full beyond greedy, each run on a fresh whisper_state (its decoders'
// generators start at std::mt19937(j), as on a new context): the tokenizer on test strings,
// initial_prompt, beam search (whisper-cli's beam 5 / best_of 5) on the audio and on it three
// times over, best-of sampling at a fixed temperature, the fallback forced by an unreachable
// logprob threshold, and token_timestamps (token t0/t1, p, pt, ptsum). "lang": language "auto"
// (the detected language, its probability and the segments).
//
// The encoder's output is not reachable through whisper.h, so this file is compiled together
// with the reference's src/whisper.cpp (the script adds it to the include path) and reads the
// state's embd_enc after whisper_encode; everything else goes through the public C API:
// whisper_pcm_to_mel (mel stats and a slice: every kMelStride-th frame, all bins),
// whisper_encode (encoder stats and kEncRows rows), whisper_decode + whisper_get_logits on the
// initial prompt (top kTop and every kLogitStride-th id), whisper_full greedy (defaults, no
// printing; segments with t0/t1 in 10 ms units, text and token ids) and its wall time, and
// whisper_full again on the audio repeated three times (seeking over two windows).
#include "whisper.cpp"  // the reference's source, for whisper_state::embd_enc (see above)

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const int kMelStride = 10;
const int kEncRows[] = {0, 1, 2, 10, 100, 250, 500, 549, 1000, 1499};
const int kTop = 20;
const int kLogitStride = 50;

std::string Num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.7g", v);
  return b;
}

std::string Esc(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += char(c); }
    else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += char(c);
  }
  return o;
}

void Stats(const float* v, size_t n, const char* indent) {
  double s = 0, s2 = 0, mn = v[0], mx = v[0];
  for (size_t i = 0; i < n; ++i) { s += v[i]; s2 += double(v[i]) * v[i]; mn = std::min(mn, double(v[i])); mx = std::max(mx, double(v[i])); }
  const double mean = s / n;
  std::printf("%s\"mean\": %s, \"std\": %s, \"min\": %s, \"max\": %s,\n", indent, Num(mean).c_str(),
              Num(std::sqrt(std::max(0.0, s2 / n - mean * mean))).c_str(), Num(mn).c_str(), Num(mx).c_str());
}

// Mono 16 kHz, 16-bit PCM or 32-bit float (the reference's tools resample elsewhere; the
// samples used here are already so).
bool ReadWav(const char* path, std::vector<float>* out) {
  FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  std::vector<unsigned char> b;
  unsigned char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  std::fclose(f);
  size_t o = 12;
  uint16_t format = 1, bits = 16;
  while (o + 8 <= b.size()) {
    uint32_t sz;
    std::memcpy(&sz, &b[o + 4], 4);
    if (std::memcmp(&b[o], "fmt ", 4) == 0 && o + 24 <= b.size()) {
      std::memcpy(&format, &b[o + 8], 2);
      std::memcpy(&bits, &b[o + 22], 2);
    }
    if (std::memcmp(&b[o], "data", 4) == 0) {
      const size_t width = bits / 8;
      for (size_t i = 0; i < sz / width && o + 8 + width * (i + 1) <= b.size(); ++i) {
        if (format == 3 && bits == 32) {
          float v;
          std::memcpy(&v, &b[o + 8 + 4 * i], 4);
          out->push_back(v);
        } else if (format == 1 && bits == 16) {
          int16_t v;
          std::memcpy(&v, &b[o + 8 + 2 * i], 2);
          out->push_back(v / 32768.0f);
        } else {
          return false;
        }
      }
      return true;
    }
    o += 8 + sz + (sz & 1);
  }
  return false;
}

void SegmentsFromState(whisper_state* st, bool token_data) {
  std::printf("\"segments\": [");
  for (int s = 0; s < whisper_full_n_segments_from_state(st); ++s) {
    std::printf("%s{\"t0\": %lld, \"t1\": %lld, \"text\": \"%s\", \"tokens\": [", s ? ",\n      " : "\n      ",
                (long long)whisper_full_get_segment_t0_from_state(st, s), (long long)whisper_full_get_segment_t1_from_state(st, s),
                Esc(whisper_full_get_segment_text_from_state(st, s)).c_str());
    for (int t = 0; t < whisper_full_n_tokens_from_state(st, s); ++t)
      std::printf("%s%d", t ? "," : "", whisper_full_get_token_id_from_state(st, s, t));
    std::printf("]");
    if (token_data) {
      std::printf(", \"token_data\": [");
      for (int t = 0; t < whisper_full_n_tokens_from_state(st, s); ++t) {
        const whisper_token_data d = whisper_full_get_token_data_from_state(st, s, t);
        std::printf("%s[%d,%d,%s,%s,%s,%lld,%lld]", t ? "," : "", d.id, d.tid, Num(d.p).c_str(), Num(d.pt).c_str(),
                    Num(d.ptsum).c_str(), (long long)d.t0, (long long)d.t1);
      }
      std::printf("]");
    }
    std::printf("}");
  }
  std::printf("]");
}

// One whisper_full on a fresh state; prints `"name": {..., "segments": [...]}`.
bool Run(whisper_context* ctx, const char* name, const whisper_full_params& fp, const std::vector<float>& pcm, bool last,
         bool token_data = false) {
  whisper_state* st = whisper_init_state(ctx);
  if (!st || whisper_full_with_state(ctx, st, fp, pcm.data(), int(pcm.size())) != 0) return false;
  const int lang = whisper_full_lang_id_from_state(st);
  std::printf("  \"%s\": {\"language\": \"%s\", ", name, lang >= 0 ? whisper_lang_str(lang) : "");
  SegmentsFromState(st, token_data);
  std::printf("}%s\n", last ? "" : ",");
  whisper_free_state(st);
  return true;
}

whisper_full_params Quiet(whisper_sampling_strategy s, int threads) {
  whisper_full_params fp = whisper_full_default_params(s);
  fp.n_threads = threads;
  fp.print_progress = false;
  fp.print_realtime = false;
  fp.print_timestamps = false;
  fp.print_special = false;
  fp.language = "en";
  return fp;
}

const char* const kPrompt = "President Kennedy's inaugural address, January 20, 1961: the torch is passed.";
const char* const kTokenizeTexts[] = {
    "Hello world", kPrompt, "  two  spaces, trailing ", "It's we'll they've I'm you'd 'twas", "x=3.14159; y = 2e10!!",
    "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "tab\tnew\nline\r\n end"};

int Decoding(whisper_context* ctx, const std::vector<float>& pcm, int threads) {
  std::printf("{\n  \"reference\": \"whisper.cpp %s\",\n  \"tokenize\": [", whisper_version());
  for (size_t i = 0; i < sizeof kTokenizeTexts / sizeof kTokenizeTexts[0]; ++i) {
    std::vector<whisper_token> t(1024);
    const int n = whisper_tokenize(ctx, kTokenizeTexts[i], t.data(), int(t.size()));
    std::printf("%s{\"text\": \"%s\", \"ids\": [", i ? ",\n    " : "\n    ", Esc(kTokenizeTexts[i]).c_str());
    for (int j = 0; j < n; ++j) std::printf("%s%d", j ? "," : "", t[size_t(j)]);
    std::printf("]}");
  }
  std::printf("],\n  \"prompt\": \"%s\",\n", Esc(kPrompt).c_str());
  std::vector<float> three;
  for (int i = 0; i < 3; ++i) three.insert(three.end(), pcm.begin(), pcm.end());

  whisper_full_params fp = Quiet(WHISPER_SAMPLING_GREEDY, threads);
  fp.initial_prompt = kPrompt;
  if (!Run(ctx, "greedy_prompt", fp, pcm, false)) return 1;
  if (!Run(ctx, "greedy_prompt_x3", fp, three, false)) return 1;
  fp.carry_initial_prompt = true;
  if (!Run(ctx, "greedy_carry_prompt_x3", fp, three, false)) return 1;

  fp = Quiet(WHISPER_SAMPLING_BEAM_SEARCH, threads);  // whisper-cli's defaults: beam 5, best_of 5
  fp.greedy.best_of = 5;
  fp.beam_search.beam_size = 5;
  if (!Run(ctx, "beam5", fp, pcm, false)) return 1;
  if (!Run(ctx, "beam5_x3", fp, three, false)) return 1;

  fp = Quiet(WHISPER_SAMPLING_GREEDY, threads);
  fp.temperature = 0.4f;
  fp.temperature_inc = 0.0f;
  if (!Run(ctx, "sampled_t04_best5", fp, pcm, false)) return 1;
  fp = Quiet(WHISPER_SAMPLING_GREEDY, threads);
  fp.logprob_thold = 0.0f;  // every window fails: the fallback runs up to temperature 1.0
  if (!Run(ctx, "fallback_forced", fp, pcm, false)) return 1;

  fp = Quiet(WHISPER_SAMPLING_GREEDY, threads);
  fp.token_timestamps = true;
  if (!Run(ctx, "greedy_token_timestamps", fp, pcm, false, true)) return 1;
  if (!Run(ctx, "greedy_token_timestamps_x3", fp, three, true, true)) return 1;
  std::printf("}\n");
  return 0;
}

int Lang(whisper_context* ctx, const std::vector<float>& pcm, int threads) {
  std::vector<float> probs(size_t(whisper_lang_max_id() + 1));
  if (whisper_pcm_to_mel(ctx, pcm.data(), int(pcm.size()), threads) != 0) return 1;
  const int id = whisper_lang_auto_detect(ctx, 0, threads, probs.data());
  if (id < 0) return 1;
  std::printf("{\n  \"reference\": \"whisper.cpp %s\",\n  \"detected\": \"%s\", \"probability\": %s,\n",
              whisper_version(), whisper_lang_str(id), Num(probs[size_t(id)]).c_str());
  whisper_full_params fp = Quiet(WHISPER_SAMPLING_GREEDY, threads);
  fp.language = "auto";
  if (!Run(ctx, "greedy_auto", fp, pcm, true)) return 1;
  std::printf("}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.bin AUDIO.wav THREADS [decoding|lang]\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[3]);
  std::vector<float> pcm;
  if (!ReadWav(argv[2], &pcm)) { std::fprintf(stderr, "cannot read %s\n", argv[2]); return 1; }
  whisper_context_params cp = whisper_context_default_params();
  cp.use_gpu = false;
  cp.flash_attn = false;
  whisper_context* ctx = whisper_init_from_file_with_params(argv[1], cp);
  if (!ctx) return 1;
  if (argc == 5) {
    const std::string mode = argv[4];
    const int rc = mode == "decoding" ? Decoding(ctx, pcm, threads) : mode == "lang" ? Lang(ctx, pcm, threads) : 2;
    whisper_free(ctx);
    return rc;
  }

  std::printf("{\n  \"reference\": \"whisper.cpp %s\",\n  \"n_samples\": %zu,\n", whisper_version(), pcm.size());

  // Mel.
  if (whisper_pcm_to_mel(ctx, pcm.data(), int(pcm.size()), threads) != 0) return 1;
  const whisper_mel& mel = ctx->state->mel;
  std::printf("  \"mel\": {\n    \"n_mel\": %d, \"n_len\": %d, \"n_len_org\": %d, \"stride\": %d,\n", mel.n_mel,
              mel.n_len, mel.n_len_org, kMelStride);
  Stats(mel.data.data(), mel.data.size(), "    ");
  std::printf("    \"frames\": [");
  for (int t = 0, k = 0; t < mel.n_len_org; t += kMelStride, ++k) {
    std::printf("%s[", k ? ",\n      " : "\n      ");
    for (int j = 0; j < mel.n_mel; ++j) std::printf("%s%s", j ? "," : "", Num(mel.data[size_t(j) * mel.n_len + t]).c_str());
    std::printf("]");
  }
  std::printf("]\n  },\n");

  // Encoder (window at offset 0).
  if (whisper_encode(ctx, 0, threads) != 0) return 1;
  ggml_tensor* enc = ctx->state->embd_enc;
  const int n_state = int(enc->ne[0]), n_ctx = int(enc->ne[1]);
  std::vector<float> e(size_t(n_state) * n_ctx);
  ggml_backend_tensor_get(enc, e.data(), 0, e.size() * sizeof(float));
  std::printf("  \"encoder\": {\n    \"n_ctx\": %d, \"n_state\": %d,\n", n_ctx, n_state);
  Stats(e.data(), e.size(), "    ");
  std::printf("    \"rows\": [");
  for (size_t r = 0; r < sizeof kEncRows / sizeof kEncRows[0]; ++r) std::printf("%s%d", r ? "," : "", kEncRows[r]);
  std::printf("],\n    \"values\": [");
  for (size_t r = 0; r < sizeof kEncRows / sizeof kEncRows[0]; ++r) {
    std::printf("%s[", r ? ",\n      " : "\n      ");
    for (int j = 0; j < n_state; ++j) std::printf("%s%s", j ? "," : "", Num(e[size_t(kEncRows[r]) * n_state + j]).c_str());
    std::printf("]");
  }
  std::printf("]\n  },\n");

  // First decoder step on the initial prompt.
  std::vector<whisper_token> prompt = {whisper_token_sot(ctx)};
  if (whisper_is_multilingual(ctx)) {
    prompt.push_back(whisper_token_lang(ctx, whisper_lang_id("en")));
    prompt.push_back(whisper_token_transcribe(ctx));
  }
  if (whisper_decode(ctx, prompt.data(), int(prompt.size()), 0, threads) != 0) return 1;
  const int n_vocab = whisper_n_vocab(ctx);
  const float* lg = whisper_get_logits(ctx) + size_t(prompt.size() - 1) * n_vocab;
  std::vector<int> order(n_vocab);
  for (int i = 0; i < n_vocab; ++i) order[i] = i;
  std::partial_sort(order.begin(), order.begin() + kTop, order.end(), [&](int a, int b) { return lg[a] > lg[b]; });
  std::printf("  \"logits\": {\n    \"prompt\": [");
  for (size_t i = 0; i < prompt.size(); ++i) std::printf("%s%d", i ? "," : "", prompt[i]);
  std::printf("], \"n_vocab\": %d, \"stride\": %d,\n", n_vocab, kLogitStride);
  Stats(lg, size_t(n_vocab), "    ");
  std::printf("    \"top\": [");
  for (int i = 0; i < kTop; ++i) std::printf("%s[%d,%s]", i ? "," : "", order[i], Num(lg[order[i]]).c_str());
  std::printf("],\n    \"strided\": [");
  for (int i = 0; i < n_vocab; i += kLogitStride) std::printf("%s%s", i ? "," : "", Num(lg[i]).c_str());
  std::printf("]\n  },\n");

  // Greedy transcription with whisper_full's defaults.
  const whisper_full_params fp = Quiet(WHISPER_SAMPLING_GREEDY, threads);
  const auto t0 = std::chrono::steady_clock::now();
  if (whisper_full(ctx, fp, pcm.data(), int(pcm.size())) != 0) return 1;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  \"greedy\": {\n    \"threads\": %d, \"wall_s\": %.3f,\n", threads, secs);
  std::printf("    ");
  SegmentsFromState(ctx->state, false);
  std::printf("\n  },\n");

  // The same audio three times over (33 s): two windows, seeking and the previous text as prompt.
  std::vector<float> three;
  for (int i = 0; i < 3; ++i) three.insert(three.end(), pcm.begin(), pcm.end());
  if (whisper_full(ctx, fp, three.data(), int(three.size())) != 0) return 1;
  std::printf("  \"greedy_jfk_x3\": {\n");
  std::printf("    ");
  SegmentsFromState(ctx->state, false);
  std::printf("\n  }\n}\n");
  whisper_free(ctx);
  return 0;
}
