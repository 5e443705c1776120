// Unicode facts the tokenizers need: UTF-8 <-> codepoints and per-codepoint category flags
// (the \p{..} classes of the pre-tokenizer regexes). Tables are generated from the Unicode
// Character Database by scripts/gen_unicode_tables.py into unicode_tables.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/utf8.h"

namespace zf::tok {

// Category flags, one bit per general-category major class plus helpers.
enum CodepointFlag : uint16_t {
  kCpUndefined = 0x0001,    // unassigned (Cn)
  kCpNumber = 0x0002,       // \p{N}
  kCpLetter = 0x0004,       // \p{L}
  kCpSeparator = 0x0008,    // \p{Z}
  kCpMark = 0x0010,         // \p{M}
  kCpPunctuation = 0x0020,  // \p{P}
  kCpSymbol = 0x0040,       // \p{S}
  kCpControl = 0x0080,      // \p{C} (except Cn)
  kCpWhitespace = 0x0100,   // \s (White_Space property)
  kCpLowercase = 0x0200,    // \p{Ll}
  kCpUppercase = 0x0400,    // \p{Lu}
};

uint16_t CodepointFlags(uint32_t cp);
inline bool IsWhitespace(uint32_t cp) { return (CodepointFlags(cp) & kCpWhitespace) != 0; }
inline bool IsLetter(uint32_t cp) { return (CodepointFlags(cp) & kCpLetter) != 0; }
inline bool IsNumber(uint32_t cp) { return (CodepointFlags(cp) & kCpNumber) != 0; }

// Simple (1:1) lowercase mapping; cp itself when it has none.
uint32_t ToLower(uint32_t cp);

// First codepoint of cp's canonical decomposition (NFD), cp itself when it has none: the
// accent-stripping step of BERT's normalizer as the reference applies it.
uint32_t NfdBase(uint32_t cp);

// Decodes valid UTF-8 (callers validate first). offsets[i] is the byte offset of cps[i];
// offsets has one extra entry, the text size.
void DecodeUtf8(std::string_view text, std::vector<uint32_t>* cps, std::vector<size_t>* offsets);
using zf::AppendUtf8;  // common/utf8.h

// Length of the UTF-8 sequence starting with byte c (1 for invalid lead bytes).
inline size_t Utf8Len(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
}

}  // namespace zf::tok
