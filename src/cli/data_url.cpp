// Base64 and data: URLs (RFC 4648, RFC 2397).
#include "data_url.h"

#include <cstdint>

namespace cli {

namespace {

// The 6-bit value of a base64 character (both alphabets), -1 for any other byte.
int Sextet(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

bool StartsWith(const std::string& s, size_t at, const char* prefix) {
  for (size_t i = 0; prefix[i] != '\0'; ++i) {
    if (at + i >= s.size() || s[at + i] != prefix[i]) return false;
  }
  return true;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

}  // namespace

std::string Base64Encode(const void* data, size_t size) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t a = bytes[i], b = i + 1 < size ? bytes[i + 1] : 0, c = i + 2 < size ? bytes[i + 2] : 0;
    const uint32_t t = (a << 16) | (b << 8) | c;
    out += kAlphabet[(t >> 18) & 63];
    out += kAlphabet[(t >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(t >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[t & 63] : '=';
  }
  return out;
}

size_t Base64DecodedSize(const std::string& text) {
  size_t n = text.size();
  while (n > 0 && text[n - 1] == '=') --n;
  return n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1);
}

bool Base64Decode(const std::string& text, std::string* out, std::string* why) {
  out->clear();
  size_t n = text.size();
  size_t pad = 0;
  while (n > 0 && text[n - 1] == '=' && pad < 2) --n, ++pad;
  if (pad > 0 && (n + pad) % 4 != 0) {
    *why = "base64 padding at byte " + std::to_string(n) + " does not end a 4-character group";
    return false;
  }
  if (n % 4 == 1) {
    *why = "base64 of " + std::to_string(n) + " characters is truncated (a lone character ends it)";
    return false;
  }
  out->reserve(n / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const int v = Sextet(static_cast<unsigned char>(text[i]));
    if (v < 0) {
      *why = "byte " + std::to_string(i) + " is not a base64 character";
      out->clear();
      return false;
    }
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(char((acc >> bits) & 0xff));
    }
  }
  return true;
}

bool ParseDataUrl(const std::string& url, std::string* media_type, std::string* base64, std::string* why) {
  // Scheme names are case-insensitive (RFC 3986).
  if (url.size() < 5 || Lower(url[0]) != 'd' || Lower(url[1]) != 'a' || Lower(url[2]) != 't' || Lower(url[3]) != 'a' ||
      url[4] != ':') {
    *why = "not a data: URL";
    return false;
  }
  const size_t comma = url.find(',', 5);
  if (comma == std::string::npos) {
    *why = "a data: URL needs a ',' before its data";
    return false;
  }
  const std::string head = url.substr(5, comma - 5);  // mediatype[;param]*[;base64]
  const size_t semi = head.find(';');
  *media_type = head.substr(0, semi);
  for (char& c : *media_type) c = Lower(c);
  bool is_base64 = false;
  for (size_t at = semi; at != std::string::npos;) {
    const size_t next = head.find(';', at + 1);
    std::string param = head.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    for (char& c : param) c = Lower(c);
    is_base64 = param == "base64";  // only as the last parameter
    at = next;
  }
  if (!is_base64) {
    *why = "the data: URL is not base64-encoded (\"data:<type>;base64,<data>\")";
    return false;
  }
  *base64 = url.substr(comma + 1);
  return true;
}

std::string SniffImageType(const std::string& b) {
  if (StartsWith(b, 0, "\x89PNG\r\n\x1a\n")) return "image/png";
  if (StartsWith(b, 0, "\xff\xd8\xff")) return "image/jpeg";
  if (StartsWith(b, 0, "GIF87a") || StartsWith(b, 0, "GIF89a")) return "image/gif";
  if (StartsWith(b, 0, "BM")) return "image/bmp";
  if (StartsWith(b, 0, "RIFF") && StartsWith(b, 8, "WEBP")) return "image/webp";
  return "";
}

}  // namespace cli
