// Byte-level BPE: a pre-tokenized word (bytes mapped to printable codepoints, or raw UTF-8 for
// SPM-style BPE) starts as one symbol per codepoint; the adjacent pair with the lowest merge
// rank is merged until none is left. Pieces that are not tokens fall back to one token per
// byte-character (SPM-style: per byte, as "<0xXX>").
#include <array>
#include <cstdio>
#include <queue>
#include <string>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace zf::tok {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t off;
  size_t n;
};

struct Bigram {
  int left;
  int right;
  int32_t rank;
  std::string text;
  bool operator<(const Bigram& o) const {  // priority_queue: lowest rank, then leftmost
    return rank > o.rank || (rank == o.rank && left > o.left);
  }
};

// GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the rest to 256 + k.
struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int, 324> from_cp{};  // codepoint -> byte, -1 if none (all codepoints < 324)
  ByteMap() {
    from_cp.fill(-1);
    int k = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_cp[b] = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + k++);
      from_cp[to_cp[b]] = b;
    }
  }
};

const ByteMap& Bytes() {
  static const ByteMap m;
  return m;
}

}  // namespace

std::string ByteEncode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) AppendUtf8(Bytes().to_cp[c], &out);
  return out;
}

std::string ByteDecode(std::string_view encoded) {
  std::vector<uint32_t> cps;
  std::vector<size_t> offs;
  DecodeUtf8(encoded, &cps, &offs);
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    uint32_t cp = cps[i];
    if (cp < Bytes().from_cp.size() && Bytes().from_cp[cp] >= 0) {
      out.push_back(static_cast<char>(Bytes().from_cp[cp]));
    } else {
      out.append(encoded.substr(offs[i], offs[i + 1] - offs[i]));
    }
  }
  return out;
}

void BpeEncodeWord(const Vocab& vocab, std::string_view word, std::vector<int32_t>* out) {
  std::vector<Symbol> symbols;
  const bool newlines_only = vocab.whole_newline_words && !word.empty() &&
                             word.find_first_not_of('\n') == std::string_view::npos;
  if (vocab.ignore_merges || newlines_only) {
    if (const int32_t id = vocab.Find(word); id >= 0) {
      out->push_back(id);
      return;
    }
  }
  for (size_t off = 0; off < word.size();) {
    size_t len = std::min(Utf8Len(static_cast<unsigned char>(word[off])), word.size() - off);
    int idx = static_cast<int>(symbols.size());
    symbols.push_back({idx - 1, off + len == word.size() ? -1 : idx + 1, off, len});
    off += len;
  }
  std::priority_queue<Bigram> queue;
  auto add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    std::string_view l = word.substr(symbols[left].off, symbols[left].n);
    std::string_view r = word.substr(symbols[right].off, symbols[right].n);
    int32_t rank = vocab.MergeRank(l, r);
    if (rank < 0) return;
    queue.push({left, right, rank, std::string(word.substr(symbols[left].off, l.size() + r.size()))});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) add(i - 1, i);
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.text.size() ||
        word.substr(l.off, l.n + r.n) != b.text) {
      continue;  // stale
    }
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    add(l.prev, b.left);
    add(b.left, l.next);
  }
  for (const Symbol& s : symbols) {
    if (s.n == 0) continue;
    std::string_view piece = word.substr(s.off, s.n);
    int32_t id = vocab.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {  // as the reference: each byte of the encoded text on its own
      int32_t b = -1;
      if (vocab.spm_style_bpe) {  // only the "<0xXX>" form; a byte without one is dropped
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned>(static_cast<uint8_t>(c)));
        b = vocab.Find(hex);
      } else {
        b = vocab.Find(std::string_view(&c, 1));
      }
      if (b >= 0) out->push_back(b);
    }
  }
}

}  // namespace zf::tok
