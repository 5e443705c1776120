// Records the reference's (llama.cpp's) logits at every position of a fixed token sequence for
// one model-family file, as JSON on stdout. Built and run by record_family_goldens.sh against
// the reference's libllama; not part of zerfoo.
//
//   family_recorder MODEL.gguf SHA256 [RAW.f32] > golden.json   (exit 3: the reference refused the file)
//
// With RAW.f32, also every position's full logits as float32, [n_tokens][n_vocab] (for
// check_quantized_families.sh's full-vocabulary comparison). FAMILY_RECORDER_GREEDY=N appends N
// greedy steps to the tokens (and positions) recorded.
//
// Tokens: the reference's tokenization of kText with the model's special tokens (BOS where the
// vocabulary adds one), first kMaxTokens kept. Per position: mean and standard deviation of all
// n_vocab logits, the top kTop ids with their logits, and the z-scores ((logit - mean) / std,
// 3 decimals) of kSample vocabulary ids drawn once per file with a fixed seed (enough for the
// cosine of mean-centred logits on the zerfoo side without storing vocab-sized vectors).
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

const char* kText =
    "The quick brown fox jumps over the lazy dog.\ndef area(r):\n    return 3.14159 * r ** 2"
    "  # caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\xA6\x99";
const int kMaxTokens = 32;
const int kTop = 16;
const int kSample = 512;
const int kCtx = 256;

std::string Json(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += static_cast<char>(c); }
    else if (c == '\n') o += "\\n";
    else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += static_cast<char>(c);
  }
  return o + "\"";
}

template <typename T>
std::string List(const std::vector<T>& v, const char* fmt) {
  std::string o = "[";
  char b[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(b, sizeof b, fmt, v[i]);
    o += (i ? "," : "") + std::string(b);
  }
  return o + "]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf SHA256 [RAW.f32]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const std::string file = path.substr(path.find_last_of('/') + 1);
  llama_backend_init();
  llama_log_set([](ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  }, nullptr);
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(path.c_str(), mp);
  if (!model) {
    std::fprintf(stderr, "%s: the reference refused the file\n", file.c_str());
    return 3;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  char arch[64] = {0};
  llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);

  std::string text = kText;
  std::vector<llama_token> ids(text.size() + 16);
  int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                         static_cast<int32_t>(ids.size()), true, false);
  if (n <= 0) return 1;
  ids.resize(std::min(n, kMaxTokens));

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = kCtx;
  cp.n_batch = kCtx;
  cp.n_ubatch = kCtx;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  llama_batch batch = llama_batch_init(static_cast<int32_t>(ids.size()), 0, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = static_cast<int32_t>(ids.size());
  if (llama_decode(ctx, batch) != 0) return 1;
  // Every position's logits; with FAMILY_RECORDER_GREEDY=N, then N greedy steps (each argmax fed
  // back one token at a time; tokens and positions then cover them too).
  std::vector<float> all;
  for (size_t p = 0; p < ids.size(); ++p) {
    const float* lg = llama_get_logits_ith(ctx, static_cast<int32_t>(p));
    all.insert(all.end(), lg, lg + n_vocab);
  }
  const char* greedy = std::getenv("FAMILY_RECORDER_GREEDY");
  for (int step = 0, steps = greedy ? std::atoi(greedy) : 0; step < steps; ++step) {
    const float* last = all.data() + (ids.size() - 1) * size_t(n_vocab);
    llama_token next = static_cast<llama_token>(std::max_element(last, last + n_vocab) - last);
    batch.token[0] = next;
    batch.pos[0] = static_cast<llama_pos>(ids.size());
    batch.n_seq_id[0] = 1;
    batch.seq_id[0][0] = 0;
    batch.logits[0] = 1;
    batch.n_tokens = 1;
    if (llama_decode(ctx, batch) != 0) return 1;
    ids.push_back(next);
    const float* lg = llama_get_logits_ith(ctx, 0);
    all.insert(all.end(), lg, lg + n_vocab);
  }

  // The sampled ids: distinct, sorted, from a fixed seed (the same for every file of a vocabulary).
  std::mt19937 gen(20261124u);
  std::uniform_int_distribution<int> pick(0, n_vocab - 1);
  std::set<int> chosen;
  while (static_cast<int>(chosen.size()) < std::min(kSample, n_vocab)) chosen.insert(pick(gen));
  std::vector<int> sample(chosen.begin(), chosen.end());

  std::printf("{\n \"reference\": \"llama.cpp (llama-cpp-python 0.3.36 sdist)\",\n \"file\": %s,\n"
              " \"sha256\": %s,\n \"arch\": %s,\n \"n_vocab\": %d,\n \"n_ctx\": %d,\n \"text\": %s,\n"
              " \"tokens\": %s,\n \"sample_ids\": %s,\n \"positions\": [\n",
              Json(file).c_str(), Json(argv[2]).c_str(), Json(arch).c_str(), n_vocab, kCtx,
              Json(text).c_str(), List(ids, "%d").c_str(), List(sample, "%d").c_str());
  for (size_t p = 0; p < ids.size(); ++p) {
    const float* lg = all.data() + p * size_t(n_vocab);
    double sum = 0, sq = 0;
    for (int i = 0; i < n_vocab; ++i) sum += lg[i];
    const double mean = sum / n_vocab;
    for (int i = 0; i < n_vocab; ++i) sq += (lg[i] - mean) * (lg[i] - mean);
    const double sd = std::sqrt(sq / n_vocab);
    std::vector<int> order(n_vocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + kTop, order.end(),
                      [&](int a, int b) { return lg[a] > lg[b] || (lg[a] == lg[b] && a < b); });
    order.resize(kTop);
    std::vector<double> top, z;
    for (int id : order) top.push_back(lg[id]);
    for (int id : sample) z.push_back((lg[id] - mean) / sd);
    std::printf("  {\"pos\": %zu, \"mean\": %.6g, \"std\": %.6g, \"top_ids\": %s,\n   \"top_logits\": %s,\n"
                "   \"sample_z\": %s}%s\n",
                p, mean, sd, List(order, "%d").c_str(), List(top, "%.6g").c_str(), List(z, "%.3f").c_str(),
                p + 1 < ids.size() ? "," : "");
  }
  std::printf(" ]\n}\n");
  if (argc == 4) {
    std::FILE* raw = std::fopen(argv[3], "wb");
    if (!raw) return 1;
    std::fwrite(all.data(), sizeof(float), all.size(), raw);
    if (std::fclose(raw) != 0) return 1;
  }
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
