// Tokenizer facade: special-token partition, then SPM, BPE or WordPiece on each text fragment; pieces
// and detokenization with the reference's space rules.
#include "tokenizer/tokenizer.h"

#include <cstdlib>

#include "common/utf8.h"
#include "tokenizer/encoders.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace zf::tok {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string EscapeSpaces(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == ' ') out.append(kSpmSpace); else out.push_back(c);
  }
  return out;
}

std::string UnescapeSpaces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      out.push_back(' ');
      i += kSpmSpace.size();
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

// The reference's detokenize clean-up passes (" ," -> ",", " ' " -> "'", " 's" -> "'s", ...).
std::string CleanSpaces(const std::string& in) {
  std::string t = in;
  auto pass = [&t](auto&& fn) {
    if (t.empty()) return;
    std::string o(1, t[0]);
    for (size_t i = 1; i < t.size(); ++i) fn(i, o);
    t.swap(o);
  };
  pass([&t](size_t i, std::string& o) {
    char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) o.pop_back();
    o.push_back(x);
  });
  {
    std::string o;
    if (!t.empty()) o.push_back(t[0]);
    for (size_t i = 1; i < t.size(); ++i) {
      char x = t[i];
      if (x == '\'' && i + 1 < t.size() && t[i - 1] == ' ' && t[i + 1] == ' ') {
        o.pop_back();
        o.push_back(x);
        ++i;  // drop the following space
        continue;
      }
      o.push_back(x);
    }
    t.swap(o);
  }
  pass([&t](size_t i, std::string& o) {
    char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < t.size()) {
      char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        o.pop_back();
      } else if (i + 2 < t.size()) {
        char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) o.pop_back();
      }
    }
    o.push_back(x);
  });
  return t;
}

class TokenizerImpl final : public Tokenizer {
 public:
  Vocab v;
  std::unique_ptr<PreTokenizer> pre;  // BPE only

  Status Encode(std::string_view text, bool add_special, bool parse_special,
                std::vector<int32_t>* out) const override {
    size_t bad = 0;
    if (!IsValidUtf8(text, &bad)) {
      return Status(Code::kInvalidUtf8, "text is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
    }
    out->clear();
    std::vector<Fragment> frags = PartitionSpecial(v, text, parse_special);
    if (v.kind == VocabKind::kWpm) {
      // BERT's frame: [CLS] text [SEP] whenever special tokens are added.
      if (add_special) out->push_back(v.bos);
      for (const Fragment& f : frags) {
        if (f.token >= 0) out->push_back(f.token);
        else WpmEncode(v, text.substr(f.offset, f.length), out);
      }
      if (add_special) out->push_back(v.sep);
      return Status::Ok();
    }
    if (add_special && v.add_bos) out->push_back(v.bos);
    if (v.kind == VocabKind::kSpm) {
      bool prev_special = true;  // the first fragment gets the space prefix too
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          out->push_back(f.token);
          prev_special = true;
          continue;
        }
        std::string t = (v.add_space_prefix && prev_special) ? " " : "";
        t.append(text.substr(f.offset, f.length));
        SpmEncode(v, EscapeSpaces(t), out);
        prev_special = false;
      }
    } else {
      std::vector<uint32_t> cps;
      std::vector<size_t> offs;
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          out->push_back(f.token);
          continue;
        }
        std::string escaped;
        std::string_view t = text.substr(f.offset, f.length);
        if (v.spm_style_bpe) t = escaped = EscapeSpaces(t);
        DecodeUtf8(t, &cps, &offs);
        std::vector<size_t> bounds = pre->Split(cps);
        size_t start = 0;
        for (size_t end : bounds) {
          if (end == start) continue;
          std::string_view word = t.substr(offs[start], offs[end] - offs[start]);
          BpeEncodeWord(v, v.spm_style_bpe ? std::string(word) : ByteEncode(word), out);
          start = end;
        }
      }
    }
    if (add_special && v.add_eos && v.eos >= 0) out->push_back(v.eos);
    return Status::Ok();
  }

  std::string TokenToPiece(int32_t id, bool render_special) const override {
    if (id < 0 || id >= v.n_vocab()) return std::string();
    const uint32_t a = v.attr[id];
    if (!render_special && (a & (kAttrUnknown | kAttrControl))) return std::string();
    const std::string& t = v.text[id];
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
    // Byte-level BPE (GPT-2's byte-to-codepoint mapping) decodes bytes; SentencePiece, Gemma 4's
    // BPE over U+2581-escaped text and WordPiece unescape spaces.
    const bool spm_text = v.kind == VocabKind::kSpm || v.spm_style_bpe;
    const bool byte_level = v.kind == VocabKind::kBpe && !v.spm_style_bpe;
    if (a & kAttrNormal) return byte_level ? ByteDecode(t) : UnescapeSpaces(t);
    if (a & kAttrByte) {
      if (spm_text && t.size() == 6 && t.compare(0, 3, "<0x") == 0) {
        return std::string(1, static_cast<char>(std::strtol(t.substr(3, 2).c_str(), nullptr, 16)));
      }
      return byte_level ? ByteDecode(t) : t;
    }
    return std::string();  // unused / undefined tokens render as nothing
  }

  Status Decode(const int32_t* ids, size_t n, bool remove_special, bool render_special,
                std::string* out) const override {
    for (size_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= v.n_vocab()) {
        return InvalidArgument("token id " + std::to_string(ids[i]) + " at index " +
                               std::to_string(i) + " is out of range [0, " +
                               std::to_string(v.n_vocab()) + ")");
      }
    }
    out->clear();
    bool remove_space = v.add_space_prefix;
    if (remove_special && v.add_bos && n > 0 && ids[0] == v.bos) {
      remove_space = false;
      ++ids;
      --n;
    }
    if (remove_special && v.add_eos && n > 0 && ids[n - 1] == v.eos) --n;
    for (size_t i = 0; i < n; ++i) {
      std::string piece = TokenToPiece(ids[i], render_special);
      size_t skip = (remove_space && !piece.empty() && piece[0] == ' ') ? 1 : 0;
      out->append(piece, skip, std::string::npos);
      remove_space = false;
    }
    if (v.clean_spaces) *out = CleanSpaces(*out);
    return Status::Ok();
  }

  int32_t n_vocab() const override { return v.n_vocab(); }
  int32_t bos() const override { return v.bos; }
  int32_t eos() const override { return v.eos; }
  int32_t eot() const override { return v.eot; }
  int32_t sep() const override { return v.sep; }
  const FimTokens& fim() const override { return v.fim; }
  bool add_bos() const override { return v.add_bos; }
  bool add_eos() const override { return v.add_eos; }
  bool add_sep() const override { return v.add_sep; }
  bool IsEndOfGeneration(int32_t id) const override { return v.eog.count(id) != 0; }
  bool IsControl(int32_t id) const override {
    return id >= 0 && id < v.n_vocab() && (v.attr[id] & kAttrControl) != 0;
  }
  const std::string& TokenText(int32_t id) const override {
    static const std::string empty;
    return (id >= 0 && id < v.n_vocab()) ? v.text[id] : empty;
  }
};

}  // namespace

Status Tokenizer::Create(const gguf::GgufFile& file, std::unique_ptr<Tokenizer>* out) {
  auto t = std::make_unique<TokenizerImpl>();
  ZF_RETURN_IF_ERROR(Vocab::Load(file, &t->v));
  if (t->v.kind == VocabKind::kBpe) ZF_RETURN_IF_ERROR(PreTokenizer::Create(t->v.pre, &t->pre));
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace zf::tok
