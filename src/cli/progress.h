// Load progress bar on stderr, drawn only when stderr is a terminal (logs and pipes stay clean).
#ifndef ZERFOO_CLI_PROGRESS_H
#define ZERFOO_CLI_PROGRESS_H

#include <cstdint>

namespace cli {

class ProgressBar {
 public:
  ProgressBar();  // enabled iff stderr is a TTY
  ~ProgressBar() { Finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // zf_progress_cb: `user_data` is a ProgressBar*, `permille` is 0..1000. Never aborts.
  static int32_t Callback(void* user_data, int32_t permille);

  // Erases the bar so later output starts on a clean line. Idempotent.
  void Finish();

 private:
  void Draw(int32_t permille);
  bool enabled_;
  bool drawn_ = false;
  int32_t last_ = -1;  // last drawn percentage, to skip redundant redraws
};

}  // namespace cli

#endif  // ZERFOO_CLI_PROGRESS_H
