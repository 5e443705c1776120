#include "interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>

namespace cli::interrupt {
namespace {

volatile sig_atomic_t g_active = 0;       // a CancelScope is alive
volatile sig_atomic_t g_interrupted = 0;  // Ctrl-C seen in the current scope

void OnSigint(int) {
  if (!g_active || g_interrupted) {
    // Only async-signal-safe calls here.
    const char nl = '\n';
    ssize_t ignored = write(STDERR_FILENO, &nl, 1);
    (void)ignored;
    _exit(130);
  }
  g_interrupted = 1;
}

}  // namespace

void Install() {
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a Ctrl-C must not make reads fail with EINTR
  sigaction(SIGINT, &sa, nullptr);
}

bool Requested() { return g_interrupted != 0; }

CancelScope::CancelScope(zf_session* session) {
  g_interrupted = 0;
  g_active = 1;
  // Poll every 20 ms: cheap, and far below the time a user notices.
  watcher_ = std::thread([this, session] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      if (g_interrupted) {  // checked under mu_, so never after Stop() began
        zf_session_cancel(session);
        cancel_sent_ = true;
        return;
      }
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
  });
}

void CancelScope::Stop() {
  if (!watcher_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  watcher_.join();
  g_active = 0;
  g_interrupted = 0;
}

}  // namespace cli::interrupt
