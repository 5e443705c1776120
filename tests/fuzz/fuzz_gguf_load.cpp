// The whole GGUF reader through the public ABI: every input is a file given to zf_model_load,
// with ZF_MODEL_VOCAB_ONLY when the first byte is odd (then the rest is the file). A model that
// loads is exercised: info, metadata, tokenizer, chat template and (full loads) a two-token
// generation. Findings are crashes, sanitizer reports, ZF_ERR_INTERNAL or broken invariants.
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zf::fuzz::QuietLogs();
  if (size < 1) return 0;
  const bool vocab_only = (data[0] & 1) != 0;
  zf::fuzz::MemFile f(data + 1, size - 1);
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.device = ZF_DEVICE_CPU;
  p.n_threads = 1;
  p.flags = vocab_only ? ZF_MODEL_VOCAB_ONLY : 0;
  zf_model* m = nullptr;
  const zf_status st = zf_model_load(f.path(), &p, &m);
  zf::fuzz::CheckStatus(st, "zf_model_load status");
  zf::fuzz::Check((st == ZF_OK) == (m != nullptr), "model handle iff ZF_OK");
  if (m == nullptr) return 0;

  zf_model_summary info;
  info.struct_size = sizeof info;
  zf::fuzz::Check(zf_model_info(m, &info) == ZF_OK, "zf_model_info");
  char buf[512];
  size_t needed = 0;
  zf::fuzz::CheckStatus(zf_model_meta(m, "general.architecture", buf, sizeof buf, &needed), "meta");
  const char text[] = "Hello, world! <s> 123 \xE2\x96\x81 caf\xC3\xA9";
  int32_t ids[128];
  size_t n = 0;
  const zf_status ts = zf_tokenize(m, text, sizeof text - 1, ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL, ids,
                                   128, &n);
  zf::fuzz::CheckStatus(ts, "zf_tokenize");
  if (ts == ZF_OK) {
    for (size_t i = 0; i < n; ++i) zf::fuzz::Check(ids[i] >= 0 && ids[i] < info.n_vocab, "token id in range");
    zf::fuzz::CheckStatus(zf_detokenize(m, ids, n, ZF_DETOKENIZE_RENDER_SPECIAL, buf, sizeof buf, &needed), "detok");
  }
  const zf_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
  zf::fuzz::CheckStatus(zf_chat_apply_template(m, msgs, 2, ZF_CHAT_ADD_ASSISTANT, buf, sizeof buf, &needed), "chat");

  if (!vocab_only) {
    zf_session_params sp;
    zf_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 32;
    sp.n_threads = 1;
    zf_session* s = nullptr;
    const zf_status cs = zf_session_create(m, &sp, &s);
    zf::fuzz::CheckStatus(cs, "zf_session_create");
    if (s != nullptr) {
      zf_generate_params g;
      zf_generate_params_init(&g, sizeof g);
      g.max_tokens = 2;
      g.temperature = 0.0f;
      zf_generate_result r;
      r.struct_size = sizeof r;
      const zf_status gs = zf_generate(s, "Hi", 2, &g, nullptr, nullptr, &r);
      zf::fuzz::CheckStatus(gs, "zf_generate");
      if (gs == ZF_OK) zf::fuzz::Check(r.n_generated <= 2, "n_generated <= max_tokens");
      zf_session_free(s);
    }
  }
  zf_model_free(m);
  return 0;
}
