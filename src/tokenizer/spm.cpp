// SentencePiece-style tokenization: start from UTF-8 characters, repeatedly merge the adjacent
// pair whose concatenation is the highest-scoring vocabulary entry, then split any piece that
// is not a token back along its merge history, down to byte-fallback tokens.
#include <queue>
#include <string>
#include <unordered_map>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace zf::tok {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t off;  // byte offset into the text
  size_t n;    // byte length; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
  bool operator<(const Bigram& o) const {  // priority_queue: highest score, then leftmost
    return score < o.score || (score == o.score && left > o.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& v, std::string_view text) : vocab_(v), text_(text) {}

  void Run(std::vector<int32_t>* out) {
    for (size_t off = 0; off < text_.size();) {
      size_t len = std::min(Utf8Len(static_cast<unsigned char>(text_[off])), text_.size() - off);
      int idx = static_cast<int>(symbols_.size());
      symbols_.push_back({idx - 1, off + len == text_.size() ? -1 : idx + 1, off, len});
      off += len;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);
    while (!queue_.empty()) {
      Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[b.left];
      Symbol& r = symbols_[b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = b.left;
      TryAddBigram(l.prev, b.left);
      TryAddBigram(b.left, l.next);
    }
    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[i].next) Resegment(symbols_[i], out);
  }

 private:
  void TryAddBigram(int left, int right) {
    if (left < 0 || right < 0) return;
    std::string_view s = text_.substr(symbols_[left].off, symbols_[left].n + symbols_[right].n);
    int32_t id = vocab_.Find(s);
    if (id < 0) return;
    queue_.push({left, right, vocab_.score[id], s.size()});
    rev_merge_[std::string(s)] = {left, right};
  }

  void Resegment(const Symbol& sym, std::vector<int32_t>* out) {
    std::string_view s = text_.substr(sym.off, sym.n);
    int32_t id = vocab_.Find(s);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
    auto it = rev_merge_.find(std::string(s));
    if (it == rev_merge_.end()) {
      for (unsigned char c : s) {
        int32_t b = vocab_.ByteToken(c);
        out->push_back(b >= 0 ? b : (vocab_.unk >= 0 ? vocab_.unk : 0));
      }
      return;
    }
    Resegment(symbols_[it->second.first], out);
    Resegment(symbols_[it->second.second], out);
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram> queue_;
  std::unordered_map<std::string, std::pair<int, int>> rev_merge_;
};

}  // namespace

void SpmEncode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) {
  SpmSession(vocab, text).Run(out);
}

}  // namespace zf::tok
