// Ctrl-C handling. zerfoo.h documents zf_session_cancel() as safe from any thread but not as
// async-signal-safe, so the SIGINT handler only sets a flag; a watcher thread owned by
// CancelScope turns the flag into zf_session_cancel() from an ordinary thread, which the
// header does allow. Unlike returning nonzero from the stream callback, this also stops a long
// prefill, and the stop reason reads "cancelled".
// A second Ctrl-C, or one while nothing is generating, exits at once with status 130.
#ifndef ZERFOO_CLI_INTERRUPT_H
#define ZERFOO_CLI_INTERRUPT_H

#include <condition_variable>
#include <mutex>
#include <thread>

#include "zerfoo.h"

namespace cli::interrupt {

// Installs the SIGINT handler (once, at startup).
void Install();

// True once Ctrl-C was pressed inside the current CancelScope.
bool Requested();

// While alive, Ctrl-C cancels generation on `session` instead of exiting the process.
class CancelScope {
 public:
  explicit CancelScope(zf_session* session);
  ~CancelScope() { Stop(); }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

  // Ends the scope early (joins the watcher). Idempotent.
  void Stop();

  // After Stop(): whether zf_session_cancel() was called. If the call being guarded did not
  // stop with ZF_STOP_CANCELLED, the request is still pending and would stop the session's
  // next call at once; only zf_session_reset() clears it.
  bool cancel_sent() const { return cancel_sent_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool cancel_sent_ = false;
  std::thread watcher_;
};

}  // namespace cli::interrupt

#endif  // ZERFOO_CLI_INTERRUPT_H
