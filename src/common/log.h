// Library logging: a process-wide sink (stderr by default or the zf_set_log_callback sink).
#pragma once

#include <cstdint>

namespace zf {

enum class LogLevel : int32_t { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kNone = 4 };

// printf-style; cheap when the level is below the threshold. Thread-safe.
void Log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool LogEnabled(LogLevel level);

using LogSink = int32_t (*)(void* user_data, int32_t level, const char* msg);
void SetLogSink(LogSink sink, void* user_data);  // nullptr restores stderr
void SetLogLevel(LogLevel level);

}  // namespace zf

#define ZF_LOGD(...) ::zf::Log(::zf::LogLevel::kDebug, __VA_ARGS__)
#define ZF_LOGI(...) ::zf::Log(::zf::LogLevel::kInfo, __VA_ARGS__)
#define ZF_LOGW(...) ::zf::Log(::zf::LogLevel::kWarn, __VA_ARGS__)
#define ZF_LOGE(...) ::zf::Log(::zf::LogLevel::kError, __VA_ARGS__)
