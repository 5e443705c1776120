// Constraints fuzzed (issue #41: a Lark grammar of 10,000 chained rules overflowed the stack; a
// schema that matches nothing was a 500): byte 0 picks the kind (JSON schema, regex, choice,
// Lark) and the sampling, the rest is the constraint's text. On the tiny llama model (8 tokens)
// a generation of up to three tokens must end in ZF_OK or a clean refusal of the constraint
// (ZF_ERR_INVALID_ARGUMENT, ZF_ERR_INVALID_UTF8; ZF_ERR_OUT_OF_MEMORY where a grammar is too big
// to compile under the fuzzer's RSS limit; ZF_ERR_UNSUPPORTED in a build without constraints)
// and never in an internal error or a crash.
#include <string>

#include "common/tiny_model.h"
#include "fuzz_common.h"

namespace {

zf_model* Model() {
  static zf_model* model = zf::fuzz::LoadOnce(zf::testutil::TinyLlamaGguf(zf::gguf::testutil::kTF32, "", 0, nullptr, 32));
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zf::fuzz::QuietLogs();
  if (size < 1) return 0;
  static const int32_t kKinds[4] = {ZF_CONSTRAINT_JSON_SCHEMA, ZF_CONSTRAINT_REGEX, ZF_CONSTRAINT_CHOICE,
                                    ZF_CONSTRAINT_LARK};
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (text.find('\0') != std::string::npos) return 0;  // a C string: the text ends at its NUL
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  sp.n_ctx = 16;
  sp.n_threads = 1;
  zf_session* s = nullptr;
  zf::fuzz::Check(zf_session_create(Model(), &sp, &s) == ZF_OK, "session on the tiny model");
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.max_tokens = 3;
  g.temperature = (data[0] & 4) ? 0.0f : 0.8f;
  g.seed = 7;
  g.constraint = text.c_str();
  g.constraint_kind = kKinds[data[0] & 3];
  zf_generate_result r;
  r.struct_size = sizeof r;
  const zf_status st = zf_generate(s, "ab", 2, &g, nullptr, nullptr, &r);
  zf::fuzz::Check(st == ZF_OK || st == ZF_ERR_INVALID_ARGUMENT || st == ZF_ERR_INVALID_UTF8 ||
                      st == ZF_ERR_OUT_OF_MEMORY || st == ZF_ERR_UNSUPPORTED,  // unsupported: built without
                  "a constrained generation ends or refuses the constraint");
  zf_session_free(s);
  return 0;
}
