// Records the reference's (llama.cpp's) MoE router logits (its graph's ffn_moe_logits-<layer>,
// before softmax/sigmoid and any selection bias) for a family file, one line per layer and
// position: "L <layer> <pos> <logit of expert 0> <logit of expert 1> ...", and where the router has
// a bias (gpt-oss) the same with it added, "LB ...". The tokens are those of a
// family_recorder JSON (its first 32 decoded as one batch, any greedy steps after them one token at
// a time, as family_recorder decodes them: the reference's router logits move by ~1e-2 with the
// batch shape, enough to flip a near-tie). Not part of zerfoo; for telling a routing near-tie from
// a real difference (check_quantized_families.sh, scripts/reference/README.md).
//
//   router_recorder MODEL.gguf GOLDEN.json > router.txt
// (compile as family_recorder.cpp, plus -I<llama.cpp>/vendor for nlohmann/json.hpp)
#include <ggml-backend.h>
#include <ggml.h>
#include <llama.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

const char kName[] = "ffn_moe_logits-";
const char kBiased[] = "ffn_moe_logits_biased-";
int g_base = 0;  // the position of the batch's first token

bool OnTensor(ggml_tensor* t, bool ask, void*) {
  const bool plain = std::strncmp(t->name, kName, sizeof kName - 1) == 0;
  const bool biased = std::strncmp(t->name, kBiased, sizeof kBiased - 1) == 0;
  if (ask || !(plain || biased)) return ask ? plain || biased : true;
  const int il = std::atoi(t->name + (plain ? sizeof kName : sizeof kBiased) - 1);
  std::vector<float> buf(size_t(ggml_nelements(t)));
  ggml_backend_tensor_get(t, buf.data(), 0, buf.size() * sizeof(float));
  for (int64_t p = 0; p < t->ne[1]; ++p) {
    std::printf("%s %d %lld", plain ? "L" : "LB", il, static_cast<long long>(g_base + p));
    for (int64_t e = 0; e < t->ne[0]; ++e) std::printf(" %.7g", buf[size_t(p * t->ne[0] + e)]);
    std::printf("\n");
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf GOLDEN.json\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[2]);
  const std::vector<llama_token> ids = nlohmann::json::parse(in)["tokens"].get<std::vector<llama_token>>();
  llama_backend_init();
  llama_log_set([](ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  }, nullptr);
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 3;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;  // as family_recorder
  cp.n_threads = cp.n_threads_batch = 2;
  cp.cb_eval = OnTensor;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  const size_t prompt = std::min<size_t>(ids.size(), 32);
  llama_batch batch = llama_batch_init(static_cast<int32_t>(prompt), 0, 1);
  for (size_t start = 0; start < ids.size();) {
    const size_t n = start == 0 ? prompt : 1;
    for (size_t i = 0; i < n; ++i) {
      batch.token[i] = ids[start + i];
      batch.pos[i] = static_cast<llama_pos>(start + i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    batch.n_tokens = static_cast<int32_t>(n);
    g_base = static_cast<int>(start);
    if (llama_decode(ctx, batch) != 0) return 1;
    start += n;
  }
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
