// The SPM (llama-spm) and byte-level BPE (gpt-2) tokenizers, on the
// vocabulary-only GGUFs of tests/data/tokenizer. Byte 0 picks the vocabulary and the flags; the
// rest is the text. Invariants: invalid UTF-8 is kInvalidUtf8 and only then; ids are in
// range; detokenized text is valid UTF-8; the round trip is exact where the reference promises
// it (SPM: text without a literal U+2581; BPE: text without the characters its clean-up of
// spaces before punctuation touches), and otherwise equal up to spaces and apostrophes.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "fuzz_common.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

// Through the tokenizer's own interface (the gpt-2 file's architecture is not a model the
// library runs, so zf_model_load refuses it; the C API's tokenizer calls are fuzzed on loaded
// models by fuzz_gguf_load).
const zf::tok::Tokenizer& Vocab(int which) {
  static std::unique_ptr<zf::gguf::GgufFile> files[2];
  static std::unique_ptr<zf::tok::Tokenizer> toks[2];
  if (toks[which] == nullptr) {
    const std::string path = std::string(ZF_TEST_DATA_DIR) + "/tokenizer/ggml-vocab-" +
                             (which == 0 ? "llama-spm" : "gpt-2") + ".gguf";
    zf::Status s = zf::gguf::GgufFile::Open(path, {}, &files[which]);
    if (s.ok()) s = zf::tok::Tokenizer::Create(*files[which], &toks[which]);
    if (!s.ok()) {
      std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), s.message().c_str());
      std::abort();
    }
  }
  return *toks[which];
}

// The clean-up drops spaces before punctuation and, like the reference's, the apostrophe of a
// " ' " next to another one (" ' ' " loses one): compared without both.
std::string NoSpaces(std::string s) {
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\''; }), s.end());
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] & 1;
  const bool add_special = (data[0] & 2) != 0, parse_special = (data[0] & 4) != 0;
  const zf::tok::Tokenizer& tok = Vocab(which);
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool valid = zf::IsValidUtf8(text);
  std::vector<int32_t> ids;
  const zf::Status st = tok.Encode(text, add_special, parse_special, &ids);
  if (!valid) {
    zf::fuzz::Check(st.code() == zf::Code::kInvalidUtf8, "invalid UTF-8 is refused");
    return 0;
  }
  zf::fuzz::Check(st.ok(), "valid text tokenizes");
  for (int32_t id : ids) zf::fuzz::Check(id >= 0 && id < tok.n_vocab(), "id in range");
  std::string out;
  zf::fuzz::Check(tok.Decode(ids.data(), ids.size(), false, false, &out).ok(), "detokenize");
  zf::fuzz::Check(zf::IsValidUtf8(out), "detokenized text is valid UTF-8");
  for (size_t i = 0; i < ids.size() && i < 64; ++i) (void)tok.TokenToPiece(ids[i], true);
  if (add_special || parse_special) return 0;  // round trips are promised for plain text only
  if (which == 0) {
    if (text.find("\xE2\x96\x81") == std::string::npos) zf::fuzz::Check(out == text, "SPM round trip exact");
  } else if (text.find_first_of("?!.,'") == std::string::npos) {
    zf::fuzz::Check(out == text, "BPE round trip exact");
  } else {
    zf::fuzz::Check(NoSpaces(out) == NoSpaces(text), "BPE round trip up to the clean-up of spaces and apostrophes");
  }
  return 0;
}
