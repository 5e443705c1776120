// UTF-8 and Python str helpers for the Jinja interpreter (strings are UTF-8; Python indexes them
// by code point).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/utf8.h"

namespace zf::jinja {

// Decodes the code point at *i (advancing it); invalid bytes decode as themselves.
uint32_t DecodeUtf8(const std::string& s, size_t* i);
using zf::AppendUtf8;  // common/utf8.h
std::vector<uint32_t> ToCodepoints(const std::string& s);
std::string FromCodepoints(const std::vector<uint32_t>& cps, size_t begin, size_t end);
size_t CodepointCount(const std::string& s);
// str.isspace() for one code point.
bool IsSpace(uint32_t cp);
// str.isprintable() for one code point (approximation: controls, separators other than the
// space, format characters, surrogates and private use are not printable).
bool IsPrintable(uint32_t cp);
// str.upper()/lower() for one code point (ASCII, Latin-1, Greek and Cyrillic).
uint32_t ToUpper(uint32_t cp);
uint32_t ToLower(uint32_t cp);
std::string Upper(const std::string& s);
std::string Lower(const std::string& s);
// str.strip(chars) / lstrip / rstrip; chars == nullptr strips whitespace.
std::string Strip(const std::string& s, const std::string* chars, bool left, bool right);

}  // namespace zf::jinja
