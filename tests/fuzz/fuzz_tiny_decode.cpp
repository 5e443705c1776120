// Weight values fuzzed: a complete tiny llama model (tests/common/tiny_model.h, projection
// weights of a type chosen by the first byte) is built once; the input then overwrites bytes of
// its tensor data (records of a 3-byte offset into the data section and a byte run), the result
// is loaded from memory and decodes up to two tokens. Non-finite scales must be refused at load
// (ZF_ERR_FORMAT); everything else must load and generate without undefined behaviour.
#include <cstring>
#include <vector>

#include "common/tiny_model.h"
#include "fuzz_common.h"

namespace {

struct Base {
  std::vector<uint8_t> bytes;
  size_t data_start = 0;
};

const Base& Model(int which) {
  static Base models[8];
  static const uint32_t types[8] = {zf::gguf::testutil::kTF32,   zf::gguf::testutil::kTQ8_0,
                                    zf::gguf::testutil::kTQ4_K,  zf::gguf::testutil::kTQ6_K,
                                    zf::gguf::testutil::kTIQ4_NL, zf::gguf::testutil::kTIQ4_XS,
                                    zf::gguf::testutil::kTMXFP4, zf::gguf::testutil::kTQ4_0};
  Base& b = models[which];
  if (b.bytes.empty()) {
    zf::gguf::testutil::Layout lay;
    // F32 and Q8_0 at n_embd 32 (fast); the K quants need rows of 256.
    b.bytes = zf::testutil::TinyLlamaGguf(types[which], "", 0, &lay, which < 2 ? 32 : zf::testutil::kTinyEmbd);
    b.data_start = lay.data_start;  // only tensor data is mutated (the header has its own fuzzer)
  }
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zf::fuzz::QuietLogs();
  if (size < 1) return 0;
  const Base& base = Model((data[0] & 3) | (data[0] & 8) >> 1);  // bit 2 picks the temperature
  std::vector<uint8_t> file = base.bytes;
  const size_t span = file.size() - base.data_start;
  size_t i = 1;
  while (i + 4 <= size) {
    const size_t off = (size_t(data[i]) | size_t(data[i + 1]) << 8 | size_t(data[i + 2]) << 16) % span;
    const size_t len = std::min<size_t>(data[i + 3] % 16 + 1, size - i - 4);
    i += 4;
    for (size_t k = 0; k < len && base.data_start + off + k < file.size(); ++k) file[base.data_start + off + k] = data[i + k];
    i += len;
  }
  zf::fuzz::MemFile f(file.data(), file.size());
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.device = ZF_DEVICE_CPU;
  p.n_threads = 1;
  zf_model* m = nullptr;
  const zf_status st = zf_model_load(f.path(), &p, &m);
  zf::fuzz::Check(st == ZF_OK || st == ZF_ERR_FORMAT, "tiny model loads or is a format error");
  if (m == nullptr) return 0;
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  sp.n_ctx = 16;
  sp.n_threads = 1;
  zf_session* s = nullptr;
  zf::fuzz::Check(zf_session_create(m, &sp, &s) == ZF_OK, "session on the tiny model");
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.max_tokens = 2;
  g.temperature = (data[0] & 4) ? 0.0f : 0.8f;
  g.seed = 7;
  g.flags = ZF_GENERATE_IGNORE_EOS;
  zf_generate_result r;
  r.struct_size = sizeof r;
  zf::fuzz::Check(zf_generate(s, "ab", 2, &g, nullptr, nullptr, &r) == ZF_OK, "generate on the tiny model");
  zf::fuzz::Check(r.n_generated == 2, "two tokens generated");
  zf_session_free(s);
  zf_model_free(m);
  return 0;
}
