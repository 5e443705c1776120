// A small backtracking regex engine over Unicode codepoints, used by the byte-level BPE
// pre-tokenizers to split text into words with the reference's regex lists.
//
// Semantics are those of Perl/ECMAScript/Python `regex`: leftmost match, alternatives tried in
// order, greedy (or lazy) quantifiers with backtracking, atomic lookaheads. Matching runs on an
// explicit backtrack stack with a visited-state bitmap (as in RE2's BitState), so the stack
// never grows with the input and the work per FindAll is O(program size * input length).
//
// Supported syntax:
//   literals (any codepoint), `.` (anything but \n), escapes \r \n \t \f \v \0 \e \a,
//   \xHH \x{H..} \uHHHH, escaped metacharacters, \s \S \d \D (ASCII 0-9) \w \W (letter, mark,
//   number, '_'), \b \B, \p{X} and \P{X} for X in L N P S M Z C (also "\pL"),
//   classes [...] with ranges, negation and the escapes above inside,
//   groups (...) (not capturing) (?:...) (?i:...), alternation |,
//   quantifiers ? * + {n} {n,} {n,m} and their lazy forms (??, *?, ...),
//   lookaheads (?=...) (?!...), anchors ^ $ (start / end of the input, no multiline),
//   \A \z \Z.
// Anything else (backreferences, lookbehind, named groups, possessive quantifiers, inline
// flag changes other than (?i:...), \p{Lu} and other subcategories) fails Compile.
//
// \s is the Unicode White_Space property (kCpWhitespace); \p{C} includes unassigned codepoints.
// (?i:...) compares ToLower() of the input with the (lowercased) pattern (simple lowercase
// mapping, as the reference does, not Python's full case folding); classes under (?i) also match
// the lowercase of their members.
// Differences from Python `regex` (none matter for the pre-tokenizer patterns): \d is ASCII
// only; a loop iteration that matches the empty string fails and backtracks (ECMAScript rule)
// instead of ending the loop (Perl/Python rule); `$` only matches at the very end; a match that
// would be empty is rejected and the next alternative tried (FindAll reports non-empty matches
// only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace zf::tok {

class SplitRegex {
 public:
  // kUnsupported naming the construct and its byte offset if the pattern uses unsupported
  // syntax; kInvalidArgument for malformed patterns (bad UTF-8, unbalanced parentheses, ...).
  static Status Compile(std::string_view pattern, std::unique_ptr<SplitRegex>* out);

  // Appends the [start, end) codepoint index pairs of successive leftmost non-empty matches in
  // cps[begin, end); the regex sees cps[begin,end) as the whole input (anchors, lookaheads and
  // \b stop at its ends). Thread-safe: no mutable state.
  void FindAll(const uint32_t* cps, size_t begin, size_t end,
               std::vector<std::pair<size_t, size_t>>* matches) const;

  // Number of instructions of the compiled program (for tests / diagnostics).
  size_t program_size() const { return prog_.size(); }

  // Implementation types (public so the matcher in the .cpp can use them).
  enum class Op : uint8_t {
    kChar,      // a: codepoint
    kCharI,     // a: lowercased codepoint, compares ToLower(input)
    kClass,     // a: index into classes_
    kAny,       // anything but '\n'
    kSplit,     // try a first, then b; c: memo slot
    kJmp,       // a: target
    kBegin,     // at input start
    kEnd,       // at input end
    kWordB,     // \b
    kNotWordB,  // \B
    kLook,      // a: body start, b: 1 if negative; continues at pc+1. Body ends in kLookOk.
    kLookOk,    // end of a lookahead body
    kMatch,
  };
  struct Inst {
    Op op;
    uint32_t a = 0;
    uint32_t b = 0;
    uint32_t c = 0;
  };
  struct CharClass {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // sorted, merged, inclusive
    uint16_t flags_any = 0;                             // member if CodepointFlags & flags_any
    std::vector<uint16_t> not_flags;                    // member if !(CodepointFlags & f)
    bool word = false;                                  // \w inside
    bool not_word = false;                              // \W inside
    bool negated = false;
    bool icase = false;  // also test ToLower(cp)
    bool Contains(uint32_t cp) const;
  };

 private:
  SplitRegex() = default;
  friend class RegexCompiler;
  friend class RegexMatcher;

  std::vector<Inst> prog_;
  std::vector<CharClass> classes_;
  uint32_t num_slots_ = 0;  // memo slots (one per kSplit)
};

// Applies the regex list like the reference: starting from the whole text as one segment, each
// regex splits every current segment on its own; matches and the text around them all become
// segments. Returns segment end offsets (codepoints, ascending, last == cps.size()); empty for
// empty text.
std::vector<size_t> SplitWithRegexes(const std::vector<uint32_t>& cps,
                                     const std::vector<const SplitRegex*>& regexes);

// One step of the above: splits each segment of `bounds` (end offsets) with `re`.
std::vector<size_t> SplitSegments(const std::vector<uint32_t>& cps, const std::vector<size_t>& bounds,
                                  const SplitRegex& re);

}  // namespace zf::tok
