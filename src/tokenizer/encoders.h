// The subword algorithms over a Vocab: SentencePiece-style score merging, byte-level BPE rank
// merging and WordPiece longest match. All are pure functions of their input (thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace zf::tok {

// SPM: text already has spaces escaped to U+2581. Merges the highest-score adjacent pair
// first (ties: leftmost), then emits byte tokens for pieces not in the vocabulary.
void SpmEncode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out);

// BPE on one pre-tokenized word given in byte-encoded form (see ByteEncode), or for
// vocab.spm_style_bpe as raw UTF-8 with spaces escaped: merges the lowest-rank adjacent pair
// first (ties: leftmost).
void BpeEncodeWord(const Vocab& vocab, std::string_view word, std::vector<int32_t>* out);

// WordPiece on one raw-text fragment: BERT's normalizer (lowercase, accent stripping, control
// characters dropped), split on whitespace and around punctuation / CJK characters, then per
// word the longest vocabulary match from the left ("\u2581" marks a word start in the vocab;
// continuation pieces have no prefix); a word with an unmatched rest becomes [UNK].
void WpmEncode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out);

// GPT-2's reversible byte <-> printable-codepoint mapping.
std::string ByteEncode(std::string_view raw);
// Inverse; codepoints outside the mapping are kept as their UTF-8 bytes.
std::string ByteDecode(std::string_view encoded);

}  // namespace zf::tok
