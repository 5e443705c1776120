#include "runtime/data_url.h"

#include <cstdint>

namespace zf::rt {

namespace {

// A base64 digit's value (standard or URL-safe alphabet), or -1.
int Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

}  // namespace

Status DecodeImageDataUrl(std::string_view url, const std::string& field, std::string* bytes) {
  bytes->clear();
  if (StartsWithNoCase(url, "http://") || StartsWithNoCase(url, "https://")) {
    return InvalidArgument(field + ": an http(s) URL; the library takes data URLs only (fetch the image first and "
                                   "pass data:image/...;base64,...)");
  }
  if (!StartsWithNoCase(url, "data:")) {
    return InvalidArgument(field + ": must be a data URL (data:image/<png|jpeg|gif|bmp|webp>;base64,...)");
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return InvalidArgument(field + ": a data URL without ',' before its data");
  const std::string_view head = url.substr(5, comma - 5);
  if (!StartsWithNoCase(head, "image/")) {
    return InvalidArgument(field + ": the data URL's media type '" + std::string(head.substr(0, head.find(';'))) +
                           "' is not an image");
  }
  if (head.size() < 7 || !StartsWithNoCase(head.substr(head.size() - 7), ";base64")) {
    return InvalidArgument(field + ": the data URL is not base64 (';base64' before ',')");
  }
  Status st = DecodeBase64(url.substr(comma + 1), field, bytes);
  if (!st.ok()) return Status(st.code(), st.message() + " (in the data URL)");
  return Status::Ok();
}

Status DecodeBase64(std::string_view text, const std::string& field, std::string* bytes) {
  bytes->clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      ++pad;
      continue;
    }
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    const int d = Digit(c);
    if (d < 0 || pad > 0) {
      return InvalidArgument(field + ": invalid base64 at byte " + std::to_string(i));
    }
    acc = (acc << 6) | uint32_t(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes->push_back(char((acc >> bits) & 0xff));
    }
  }
  if (pad > 2 || bits >= 6) return InvalidArgument(field + ": truncated base64");
  if (bytes->empty()) return InvalidArgument(field + ": no bytes");
  return Status::Ok();
}

}  // namespace zf::rt
