// A tiny JSON writer: string escaping (invalid UTF-8 becomes U+FFFD so the output is always
// valid JSON) and an object builder. Enough for the CLI's --json output; no external deps.
#ifndef ZERFOO_CLI_JSON_H
#define ZERFOO_CLI_JSON_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace cli::json {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid.
inline size_t Utf8SeqLen(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return n;
}

// `s` as a quoted JSON string.
inline std::string Quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    const size_t n = Utf8SeqLen(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for each invalid byte
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  out += '"';
  return out;
}

// Builds one JSON object: Object().Str("a", x).Int("b", 1).Done().
class Object {
 public:
  Object& Str(const char* key, std::string_view v) { return Raw(key, Quote(v)); }
  Object& Int(const char* key, long long v) { return Raw(key, std::to_string(v)); }
  Object& Bool(const char* key, bool v) { return Raw(key, v ? "true" : "false"); }
  Object& Null(const char* key) { return Raw(key, "null"); }
  // Fixed-point number; NaN/inf have no JSON form and become null.
  Object& Num(const char* key, double v, int decimals = 2) {
    if (!std::isfinite(v)) return Null(key);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return Raw(key, buf);
  }
  // `json` must already be valid JSON (a nested object or array).
  Object& Raw(const char* key, const std::string& json) {
    body_ += body_.empty() ? "" : ",";
    body_ += Quote(key) + ":" + json;
    return *this;
  }
  std::string Done() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace cli::json

#endif  // ZERFOO_CLI_JSON_H
