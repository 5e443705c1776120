// Vocabulary loaded from tokenizer.ggml.* metadata: token texts, scores, attributes, special
// token ids, the add_bos/add_eos/space rules, and the partition of text around special tokens.
// Shared by the SPM and BPE encoders; immutable after Load.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"

namespace zf::tok {

// Token attributes (bit set), derived from tokenizer.ggml.token_type plus the reference's
// text-based fixes (end-of-turn tokens forced to control, control tokens named "unused").
enum TokenAttr : uint32_t {
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 6,  // special-token match eats whitespace on its left
  kAttrRstrip = 1u << 7,  // ... and on its right
};

enum class VocabKind { kSpm, kBpe, kWpm };

// Fill-in-the-middle tokens (-1 when absent): tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id
// (and the older prefix/suffix/middle_token_id), else the reference's texts ("<|fim_prefix|>",
// "<fim-prefix>", "<PRE>", ...). pre/suf/mid frame the prompt; rep/sep mark repository files.
struct FimTokens {
  int32_t pre = -1, suf = -1, mid = -1, pad = -1, rep = -1, sep = -1;
};

struct Vocab {
  Vocab() = default;
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  VocabKind kind = VocabKind::kSpm;
  std::string pre;  // tokenizer.ggml.pre (BPE)
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<uint32_t> attr;
  // Keys view the strings in `text` (reserved once, never reallocated), so lookups by
  // string_view need no allocation; hence a Vocab is not copyable.
  std::unordered_map<std::string_view, int32_t> text_to_id;
  // BPE merge ranks keyed by left + '\0' + right.
  std::unordered_map<std::string, int32_t> merge_rank;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
  int32_t sep = -1;  // WordPiece: [SEP], appended with add_special (and between rerank pairs)
  bool add_bos = false, add_eos = false;
  bool add_sep = false;  // a [SEP] between the two texts of a pair (rerankers)
  bool add_space_prefix = false;  // SPM: prefix text with a space
  bool clean_spaces = false;      // detokenize: " ," -> "," etc.
  bool ignore_merges = false;     // BPE: whole words found in the vocab skip merging
  bool lowercase = true;          // WordPiece normalizer: lowercase the text
  bool strip_accents = true;      // ... and drop accents (NFD base, marks removed)
  size_t max_token_len = 0;       // longest token text in bytes (WordPiece's match window)
  // BPE over raw UTF-8 with spaces as U+2581 and "<0xXX>" byte tokens (Gemma 4), instead of
  // GPT-2's byte-to-codepoint mapping.
  bool spm_style_bpe = false;
  // BPE: a word made only of newlines that is itself a token is taken whole (Gemma 4: its
  // merges of newline runs are not in rank order).
  bool whole_newline_words = false;
  FimTokens fim;
  std::unordered_set<int32_t> eog;     // end-of-generation ids
  std::vector<int32_t> special_tokens;  // control/user-defined/unknown, longest text first

  int32_t n_vocab() const { return static_cast<int32_t>(text.size()); }
  int32_t Find(std::string_view s) const;  // -1 when absent
  int32_t ByteToken(uint8_t byte) const;    // SPM "<0xXX>" token (or the 1-char token), -1
  int32_t MergeRank(std::string_view left, std::string_view right) const;  // -1 when absent

  static Status Load(const gguf::GgufFile& file, Vocab* out);
};

// A piece of the input: either raw text [offset, offset+length) or one special token.
struct Fragment {
  int32_t token = -1;  // >= 0: a special token
  size_t offset = 0;
  size_t length = 0;
};

// Splits text around special-token texts the way the reference does: longest tokens first;
// with parse_special=false only user-defined tokens are matched.
std::vector<Fragment> PartitionSpecial(const Vocab& vocab, std::string_view text,
                                       bool parse_special);

}  // namespace zf::tok
