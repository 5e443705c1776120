// Records the reference's (llama.cpp's) logits for a model with LoRA adapters applied, as JSON on
// stdout, for tests/capi/lora_test.cpp. Built and run by record_lora_goldens.sh against the
// reference's libllama; not part of zerfoo.
//
//   lora_recorder MODEL.gguf N_GREEDY ADAPTER.gguf SCALE [ADAPTER.gguf SCALE ...] > case.json
//
// Tokens: the reference's tokenization of kText (special tokens added as the vocabulary wants),
// then N_GREEDY greedy steps, each argmax fed back one token at a time. Per position: mean and
// standard deviation of all n_vocab logits, the top kTop ids with their logits, and the z-scores
// ((logit - mean) / std, 3 decimals) of kSample vocabulary ids drawn with a fixed seed (for the
// cosine of mean-centred logits on the zerfoo side).
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

const char* kText = "<|im_start|>user\nWrite a short poem about the sea.<|im_end|>\n<|im_start|>assistant\n";
const int kTop = 8;
const int kSample = 256;
const int kCtx = 256;

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
  if (argc < 5 || (argc - 3) % 2 != 0) {
    std::fprintf(stderr, "usage: %s MODEL.gguf N_GREEDY ADAPTER.gguf SCALE [ADAPTER.gguf SCALE ...]\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_log_set([](ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  }, nullptr);
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 3;
  const int n_greedy = std::atoi(argv[2]);
  std::vector<llama_adapter_lora*> adapters;
  std::vector<float> scales;
  std::string names = "[";
  for (int i = 3; i + 1 < argc; i += 2) {
    llama_adapter_lora* a = llama_adapter_lora_init(model, argv[i]);
    if (!a) {
      std::fprintf(stderr, "the reference refused the adapter %s\n", argv[i]);
      return 3;
    }
    adapters.push_back(a);
    scales.push_back(static_cast<float>(std::atof(argv[i + 1])));
    const std::string p = argv[i];
    names += std::string(names.size() > 1 ? "," : "") + "{\"file\": \"" + p.substr(p.find_last_of('/') + 1) +
             "\", \"scale\": " + argv[i + 1] + "}";
  }
  names += "]";
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const std::string text = kText;
  std::vector<llama_token> ids(text.size() + 16);
  const int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                               static_cast<int32_t>(ids.size()), true, true);
  if (n <= 0) return 1;
  ids.resize(n);
  const size_t n_prompt = ids.size();

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = kCtx;
  cp.n_batch = kCtx;
  cp.n_ubatch = kCtx;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  if (llama_set_adapters_lora(ctx, adapters.data(), adapters.size(), scales.data()) != 0) return 1;
  llama_batch batch = llama_batch_init(kCtx, 0, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = static_cast<int32_t>(ids.size());
  if (llama_decode(ctx, batch) != 0) return 1;
  std::vector<float> all;
  for (size_t p = 0; p < ids.size(); ++p) {
    const float* lg = llama_get_logits_ith(ctx, static_cast<int32_t>(p));
    all.insert(all.end(), lg, lg + n_vocab);
  }
  for (int step = 0; step < n_greedy; ++step) {
    const float* last = all.data() + (ids.size() - 1) * size_t(n_vocab);
    const llama_token next = static_cast<llama_token>(std::max_element(last, last + n_vocab) - last);
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
  // The last argmax (the token after the recorded ones), so every greedy step is checked.
  const float* last = all.data() + (ids.size() - 1) * size_t(n_vocab);
  const int next = static_cast<int>(std::max_element(last, last + n_vocab) - last);

  std::mt19937 gen(20261128u);
  std::uniform_int_distribution<int> pick(0, n_vocab - 1);
  std::set<int> chosen;
  while (static_cast<int>(chosen.size()) < std::min(kSample, n_vocab)) chosen.insert(pick(gen));
  const std::vector<int> sample(chosen.begin(), chosen.end());

  std::printf("{\"adapters\": %s,\n \"n_vocab\": %d, \"n_prompt\": %zu, \"next\": %d,\n \"tokens\": %s,\n"
              " \"sample_ids\": %s,\n \"positions\": [\n",
              names.c_str(), n_vocab, n_prompt, next, List(ids, "%d").c_str(), List(sample, "%d").c_str());
  for (size_t p = 0; p < ids.size(); ++p) {
    const float* lg = all.data() + p * size_t(n_vocab);
    double sum = 0, sq = 0;
    for (int i = 0; i < n_vocab; ++i) sum += lg[i];
    const double mean = sum / n_vocab;
    for (int i = 0; i < n_vocab; ++i) sq += (lg[i] - mean) * (lg[i] - mean);
    const double sd = std::sqrt(sq / n_vocab);
    std::vector<int> order(n_vocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + kTop, order.end(), [&](int a, int b) { return lg[a] > lg[b]; });
    std::vector<int> top(order.begin(), order.begin() + kTop);
    std::vector<float> top_l;
    for (int id : top) top_l.push_back(lg[id]);
    std::vector<float> z;
    for (int id : sample) z.push_back(static_cast<float>((lg[id] - mean) / sd));
    std::printf("  {\"mean\": %.5f, \"std\": %.5f, \"top\": %s, \"top_logits\": %s, \"z\": %s}%s\n", mean, sd,
                List(top, "%d").c_str(), List(top_l, "%.4f").c_str(), List(z, "%.3f").c_str(),
                p + 1 < ids.size() ? "," : "");
  }
  std::printf(" ]}\n");
  for (llama_adapter_lora* a : adapters) llama_adapter_lora_free(a);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
