// The SPM (llama-spm) and byte-level BPE (gpt-2) tokenizers through the public ABI, on the
// vocabulary-only GGUFs of tests/data/tokenizer. Byte 0 picks the vocabulary and the flags; the
// rest is the text. Invariants: invalid UTF-8 is ZF_ERR_INVALID_UTF8 and only then; ids are in
// range; detokenized text is valid UTF-8; the round trip is exact where the reference promises
// it (SPM: text without a literal U+2581; BPE: text without the characters its clean-up of
// spaces before punctuation touches), and otherwise equal up to spaces.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "fuzz_common.h"

namespace {

zf_model* Vocab(int which) {
  static zf_model* models[2] = {nullptr, nullptr};
  if (models[which] == nullptr) {
    const std::string path = std::string(ZF_TEST_DATA_DIR) + "/tokenizer/ggml-vocab-" +
                             (which == 0 ? "llama-spm" : "gpt-2") + ".gguf";
    zf_model_params p;
    zf_model_params_init(&p, sizeof p);
    p.flags = ZF_MODEL_VOCAB_ONLY;
    if (zf_model_load(path.c_str(), &p, &models[which]) != ZF_OK) {
      std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), zf_last_error());
      std::abort();
    }
  }
  return models[which];
}

std::string NoSpaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zf::fuzz::QuietLogs();
  if (size < 1) return 0;
  const int which = data[0] & 1;
  const uint32_t flags = (data[0] >> 1) & 3;  // ADD_SPECIAL, PARSE_SPECIAL
  zf_model* m = Vocab(which);
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool valid = zf::IsValidUtf8(text);
  std::vector<int32_t> ids(text.size() + 8);
  size_t n = 0;
  const zf_status st = zf_tokenize(m, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  if (!valid) {
    zf::fuzz::Check(st == ZF_ERR_INVALID_UTF8, "invalid UTF-8 is refused");
    return 0;
  }
  zf::fuzz::Check(st == ZF_OK, "valid text tokenizes");
  zf_model_summary info;
  info.struct_size = sizeof info;
  zf_model_info(m, &info);
  for (size_t i = 0; i < n; ++i) zf::fuzz::Check(ids[i] >= 0 && ids[i] < info.n_vocab, "id in range");
  size_t needed = 0;
  std::string out(text.size() * 4 + 64, '\0');
  zf_status ds = zf_detokenize(m, ids.data(), n, 0, &out[0], out.size(), &needed);
  if (ds == ZF_ERR_BUFFER_TOO_SMALL) {
    out.resize(needed);
    ds = zf_detokenize(m, ids.data(), n, 0, &out[0], out.size(), &needed);
  }
  zf::fuzz::Check(ds == ZF_OK, "detokenize");
  out.resize(needed - 1);
  zf::fuzz::Check(zf::IsValidUtf8(out), "detokenized text is valid UTF-8");
  // Every piece alone may be partial UTF-8 but must not fail.
  for (size_t i = 0; i < n && i < 64; ++i) {
    char piece[256];
    zf::fuzz::CheckStatus(zf_token_to_piece(m, ids[i], ZF_DETOKENIZE_RENDER_SPECIAL, piece, sizeof piece, &needed),
                          "token_to_piece");
  }
  if (flags != 0) return 0;  // round trips are promised for plain text only
  if (which == 0) {
    if (text.find("\xE2\x96\x81") == std::string::npos) zf::fuzz::Check(out == text, "SPM round trip exact");
  } else if (text.find_first_of("?!.,'") == std::string::npos) {
    zf::fuzz::Check(out == text, "BPE round trip exact");
  } else {
    zf::fuzz::Check(NoSpaces(out) == NoSpaces(text), "BPE round trip up to the space clean-up");
  }
  return 0;
}
