// Generated Unicode tables (see scripts/gen_unicode_tables.py); use unicode.h instead.
#pragma once

#include <cstdint>

namespace zf::tok::tables {

struct FlagRange {
  uint32_t start;
  uint16_t flags;
};
struct CaseMap {
  uint32_t from;
  uint32_t to;
};
struct NfdRange {
  uint32_t first;
  uint32_t last;
  uint32_t base;
};
extern const FlagRange kFlagRanges[];
extern const uint32_t kFlagRangeCount;
extern const CaseMap kLowerMap[];
extern const uint32_t kLowerMapCount;
extern const NfdRange kNfdRanges[];
extern const uint32_t kNfdRangeCount;

}  // namespace zf::tok::tables
