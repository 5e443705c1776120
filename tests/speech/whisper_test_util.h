// Shared by the Whisper golden tests: model paths (env override, else the fetch_models.sh cache),
// file reading, and the segment comparison against whisper.cpp's recorded segments.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "speech/transcribe.h"

namespace zf::speech::testing {

inline std::string ModelPath(const char* env, const char* file) {
  if (const char* p = std::getenv(env)) return p;
  std::string dir;
  if (const char* d = std::getenv("ZERFOO_MODELS")) dir = d;
  else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache/zerfoo/models";
  const std::string path = dir + "/" + file;
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? path : std::string();
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// t0, t1, text and token ids of every segment identical.
inline void CompareSegments(const TranscribeResult& res, const nlohmann::json& g) {
  for (const Segment& s : res.segments) std::printf("  [%lld -> %lld] %s\n", (long long)s.t0, (long long)s.t1, s.text.c_str());
  ASSERT_EQ(res.segments.size(), g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(res.segments[i].t0, g[i]["t0"].get<int64_t>()) << "segment " << i;
    EXPECT_EQ(res.segments[i].t1, g[i]["t1"].get<int64_t>()) << "segment " << i;
    EXPECT_EQ(res.segments[i].text, g[i]["text"].get<std::string>()) << "segment " << i;
    std::vector<int32_t> ids;
    for (const SegmentToken& t : res.segments[i].tokens) ids.push_back(t.id);
    EXPECT_EQ(ids, g[i]["tokens"].get<std::vector<int32_t>>()) << "segment " << i;
  }
}

inline std::string JoinedText(const TranscribeResult& res) {
  std::string s;
  for (const Segment& seg : res.segments) s += seg.text;
  return s;
}

}  // namespace zf::speech::testing
