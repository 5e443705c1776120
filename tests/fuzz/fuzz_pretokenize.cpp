// The regex pre-tokenizer: text split by every pre-tokenizer the library knows (hand-written
// splitters and the regex engine), plus patterns compiled by the regex engine itself. Byte 0
// picks the mode. Invariants: boundaries strictly ascending, last == number of codepoints.
#include <memory>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "fuzz_common.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/unicode.h"

namespace {

const char* const kPre[] = {"gpt-2", "llama3", "qwen2", "qwen35", "gemma4", "smollm", "deepseek-llm",
                            "deepseek-coder", "falcon", "bloom", "viking", "default"};
constexpr size_t kNumPre = sizeof kPre / sizeof kPre[0];

void CheckBounds(const std::vector<size_t>& b, size_t n) {
  if (n == 0) return;
  zf::fuzz::Check(!b.empty() && b.back() == n, "last boundary == codepoints");
  for (size_t i = 1; i < b.size(); ++i) zf::fuzz::Check(b[i - 1] < b[i], "boundaries ascending");
  zf::fuzz::Check(b[0] > 0, "no empty first segment");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 0x80) == 0) {
    static std::unique_ptr<zf::tok::PreTokenizer> pre[kNumPre];
    const size_t which = data[0] % kNumPre;
    if (!pre[which] && !zf::tok::PreTokenizer::Create(kPre[which], &pre[which]).ok()) std::abort();
    if (!zf::IsValidUtf8(rest)) return 0;  // callers validate first
    std::vector<uint32_t> cps;
    std::vector<size_t> offsets;
    zf::tok::DecodeUtf8(rest, &cps, &offsets);
    CheckBounds(pre[which]->Split(cps), cps.size());
    return 0;
  }
  // Pattern mode: "pattern\0text".
  const size_t nul = rest.find('\0');
  if (nul == std::string_view::npos || rest.size() > 512) return 0;
  const std::string_view pattern = rest.substr(0, nul), text = rest.substr(nul + 1);
  if (!zf::IsValidUtf8(pattern) || !zf::IsValidUtf8(text)) return 0;
  std::unique_ptr<zf::tok::SplitRegex> re;
  if (!zf::tok::SplitRegex::Compile(pattern, &re).ok()) return 0;
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;
  zf::tok::DecodeUtf8(text, &cps, &offsets);
  CheckBounds(zf::tok::SplitWithRegexes(cps, {re.get()}), cps.size());
  return 0;
}
