// UTF-8 validation (RFC 3629: no overlongs, no surrogates, max U+10FFFF) and encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zf {

// True if `s` is valid UTF-8; otherwise *bad_offset (if given) is the first invalid byte.
bool IsValidUtf8(std::string_view s, size_t* bad_offset = nullptr);

// Appends the UTF-8 encoding of code point cp (<= U+10FFFF) to *out.
void AppendUtf8(uint32_t cp, std::string* out);

// `s` without a UTF-8 sequence cut at its end (a streamed prefix shown whole characters only).
std::string_view WholeUtf8Prefix(std::string_view s);

}  // namespace zf
