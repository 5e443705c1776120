// Shared pieces of the subcommands: error reporting, RAII handles, model/session setup and
// mapping flags onto zf_generate_params.
#ifndef ZERFOO_CLI_COMMON_H
#define ZERFOO_CLI_COMMON_H

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "zerfoo.h"

namespace cli {

// Exit codes of the CLI.
constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, like a shell

struct ModelDeleter {
  void operator()(zf_model* m) const { zf_model_free(m); }
};
struct SessionDeleter {
  void operator()(zf_session* s) const { zf_session_free(s); }
};
using ModelPtr = std::unique_ptr<zf_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<zf_session, SessionDeleter>;

// Prints `zerfoo: error: <status name>: <zf_last_error()>` and returns kExitRuntime. Call it
// right after the failing call: zf_last_error() only lasts until the next zerfoo call.
int ReportError(zf_status status);

// Loads opts.model with a progress bar; returns ZF_OK or the failing status.
zf_status LoadModel(const Options& opts, ModelPtr* out);

// Creates a session with --threads/--ctx applied.
zf_status CreateSession(const Options& opts, zf_model* model, SessionPtr* out);

// LoadModel then CreateSession; on failure reports the error and returns false.
bool OpenModelAndSession(const Options& opts, ModelPtr* model, SessionPtr* session);

// Generation params: library defaults, then the sampling flags that were given. The params
// point into opts.stop via `stop_ptrs`, which must outlive them.
zf_generate_params MakeGenerateParams(const Options& opts, std::vector<const char*>* stop_ptrs);

// Calls fn(buf, cap, &needed) for the zerfoo functions that fail with ZF_ERR_BUFFER_TOO_SMALL
// and report the size needed; grows the buffer and retries. With `nul_terminated` the result
// stops at the NUL, otherwise it is `needed` bytes long.
template <class Fn>
zf_status FetchString(Fn fn, bool nul_terminated, std::string* out) {
  std::string buf(128, '\0');
  for (int attempt = 0; attempt < 4; ++attempt) {
    size_t needed = 0;
    const zf_status st = fn(buf.data(), buf.size(), &needed);
    if (st == ZF_ERR_BUFFER_TOO_SMALL && needed > buf.size()) {
      buf.assign(needed, '\0');
      continue;
    }
    if (st != ZF_OK) return st;
    size_t len = nul_terminated ? buf.find('\0') : needed;
    if (len > buf.size()) len = buf.size();
    out->assign(buf.data(), len);
    return ZF_OK;
  }
  return ZF_ERR_BUFFER_TOO_SMALL;
}

// "eos", "max_tokens", ... for a ZF_STOP_* value.
const char* StopReasonName(int32_t reason);

// Tokens per second, 0 when no time was measured.
double TokPerSec(int32_t n, double ms);

// The one-line summary printed to stderr after generation.
void PrintSummary(const zf_generate_result& r);

}  // namespace cli

#endif  // ZERFOO_CLI_COMMON_H
