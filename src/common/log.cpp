// Process-wide log sink and threshold (see log.h).
#include "common/log.h"
#include "common/switches.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace zf {
namespace {

LogLevel InitialLevel() {
  const char* env = env::LogLevel();
  if (env == nullptr) return LogLevel::kWarn;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  if (std::strcmp(env, "none") == 0) return LogLevel::kNone;
  return LogLevel::kWarn;
}

std::atomic<int32_t> g_level{static_cast<int32_t>(InitialLevel())};
std::mutex g_sink_mu;  // guards the sink pair so a message never sees a torn (fn, data) pair
LogSink g_sink = nullptr;
void* g_sink_data = nullptr;

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    default: return "?";
  }
}

}  // namespace

bool LogEnabled(LogLevel level) {
  return static_cast<int32_t>(level) >= g_level.load(std::memory_order_relaxed) &&
         level != LogLevel::kNone;
}

void Log(LogLevel level, const char* fmt, ...) {
  if (!LogEnabled(level)) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  LogSink sink;
  void* data;
  {
    std::lock_guard<std::mutex> lock(g_sink_mu);
    sink = g_sink;
    data = g_sink_data;
  }
  if (sink != nullptr) {
    sink(data, static_cast<int32_t>(level), buf);
  } else {
    std::fprintf(stderr, "zerfoo %s: %s\n", LevelName(level), buf);
  }
}

void SetLogSink(LogSink sink, void* user_data) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink = sink;
  g_sink_data = user_data;
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int32_t>(level)); }

}  // namespace zf
