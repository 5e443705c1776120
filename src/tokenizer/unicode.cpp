#include "tokenizer/unicode.h"

#include <algorithm>

#include "tokenizer/unicode_tables.h"

namespace zf::tok {

uint16_t CodepointFlags(uint32_t cp) {
  if (cp >= 0x110000) return kCpUndefined;
  const tables::FlagRange* begin = tables::kFlagRanges;
  const tables::FlagRange* end = begin + tables::kFlagRangeCount;
  // Last range whose start <= cp.
  const tables::FlagRange* it = std::upper_bound(
      begin, end, cp, [](uint32_t c, const tables::FlagRange& r) { return c < r.start; });
  return (it - 1)->flags;
}

uint32_t ToLower(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const tables::CaseMap* begin = tables::kLowerMap;
  const tables::CaseMap* end = begin + tables::kLowerMapCount;
  const tables::CaseMap* it = std::lower_bound(
      begin, end, cp, [](const tables::CaseMap& m, uint32_t c) { return m.from < c; });
  return (it != end && it->from == cp) ? it->to : cp;
}

uint32_t NfdBase(uint32_t cp) {
  if (cp < 0xC0) return cp;
  const tables::NfdRange* begin = tables::kNfdRanges;
  const tables::NfdRange* end = begin + tables::kNfdRangeCount;
  const tables::NfdRange* it = std::upper_bound(
      begin, end, cp, [](uint32_t c, const tables::NfdRange& r) { return c < r.first; });
  if (it == begin) return cp;
  --it;
  return cp <= it->last ? it->base : cp;
}

void DecodeUtf8(std::string_view text, std::vector<uint32_t>* cps, std::vector<size_t>* offsets) {
  cps->clear();
  if (offsets) offsets->clear();
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    size_t len = Utf8Len(s[i]);
    if (i + len > n) len = 1;
    uint32_t cp = s[i];
    if (len == 2) cp = ((s[i] & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
    if (len == 3) cp = ((s[i] & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
    if (len == 4) {
      cp = ((s[i] & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) |
           (s[i + 3] & 0x3Fu);
    }
    cps->push_back(cp);
    if (offsets) offsets->push_back(i);
    i += len;
  }
  if (offsets) offsets->push_back(n);
}


}  // namespace zf::tok
