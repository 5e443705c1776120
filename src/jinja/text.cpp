// UTF-8 and Python str helpers.
#include "jinja/text.h"

#include <algorithm>

namespace zf::jinja {

uint32_t DecodeUtf8(const std::string& s, size_t* i) {
  const auto b = static_cast<unsigned char>(s[*i]);
  int n = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
  if (n <= 0 || *i + static_cast<size_t>(n) >= s.size()) {
    ++*i;
    return b;
  }
  uint32_t cp = b & (0x3f >> n);
  for (int k = 1; k <= n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[*i + static_cast<size_t>(k)]) & 0x3f);
  *i += static_cast<size_t>(n) + 1;
  return cp;
}


std::vector<uint32_t> ToCodepoints(const std::string& s) {
  std::vector<uint32_t> v;
  v.reserve(s.size());
  for (size_t i = 0; i < s.size();) v.push_back(DecodeUtf8(s, &i));
  return v;
}

std::string FromCodepoints(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string s;
  for (size_t k = begin; k < end; ++k) AppendUtf8(cps[k], &s);
  return s;
}

size_t CodepointCount(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    DecodeUtf8(s, &i);
    ++n;
  }
  return n;
}

bool IsSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
         cp == 0x3000;
}

bool IsPrintable(uint32_t cp) {
  if (cp == ' ') return true;
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0xad) return false;
  if (IsSpace(cp)) return false;
  if ((cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f)) return false;
  if (cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xd800 && cp <= 0xf8ff)) return false;
  if (cp >= 0xf0000 || (cp >= 0xe0000 && cp <= 0xe0fff)) return false;
  return true;
}

uint32_t ToUpper(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if ((cp >= 0xe0 && cp <= 0xfe && cp != 0xf7)) return cp - 32;
  if (cp >= 0x3b1 && cp <= 0x3c9 && cp != 0x3c2) return cp - 32;
  if (cp >= 0x430 && cp <= 0x44f) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45f) return cp - 80;
  return cp;
}

uint32_t ToLower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if ((cp >= 0xc0 && cp <= 0xde && cp != 0xd7)) return cp + 32;
  if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42f) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40f) return cp + 80;
  return cp;
}

std::string Upper(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) AppendUtf8(ToUpper(DecodeUtf8(s, &i)), &o);
  return o;
}

std::string Lower(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) AppendUtf8(ToLower(DecodeUtf8(s, &i)), &o);
  return o;
}

std::string Strip(const std::string& s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> cps = ToCodepoints(s);
  std::vector<uint32_t> set;
  if (chars) set = ToCodepoints(*chars);
  auto strip = [&](uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : IsSpace(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip(cps[b])) ++b;
  if (right)
    while (e > b && strip(cps[e - 1])) --e;
  return FromCodepoints(cps, b, e);
}

}  // namespace zf::jinja
