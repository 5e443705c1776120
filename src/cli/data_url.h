// Base64 and RFC 2397 data: URLs, as images arrive in chat requests (OpenAI's image_url
// "data:image/png;base64,...", Anthropic's and Ollama's plain base64) and as `zerfoo chat --image`
// sends them. Plain C++, no JSON or HTTP.
#ifndef ZERFOO_CLI_DATA_URL_H
#define ZERFOO_CLI_DATA_URL_H

#include <cstddef>
#include <string>

namespace cli {

// Standard base64 (RFC 4648 alphabet, '=' padding).
std::string Base64Encode(const void* data, size_t size);

// Strict base64: the standard or URL-safe alphabet, padding optional but only at the end, no
// whitespace or other bytes. False with *why (the offset of the first bad byte) otherwise.
// *out receives the bytes.
bool Base64Decode(const std::string& text, std::string* out, std::string* why);

// The bytes a base64 text decodes to, from its length alone (no check of its characters).
size_t Base64DecodedSize(const std::string& text);

// A data: URL split into its media type ("image/png"; "" when omitted) and its payload, which
// must be base64 (";base64" before the comma): images are binary. False with *why otherwise.
bool ParseDataUrl(const std::string& url, std::string* media_type, std::string* base64, std::string* why);

// The image container of the first bytes (PNG, JPEG, GIF, BMP, WebP) as a media type;
// "" when none is recognized.
std::string SniffImageType(const std::string& bytes);

}  // namespace cli

#endif  // ZERFOO_CLI_DATA_URL_H
