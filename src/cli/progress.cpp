#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace cli {

ProgressBar::ProgressBar() : enabled_(isatty(STDERR_FILENO) == 1) {}

int32_t ProgressBar::Callback(void* user_data, int32_t permille) {
  static_cast<ProgressBar*>(user_data)->Draw(permille);
  return 0;
}

void ProgressBar::Draw(int32_t permille) {
  if (!enabled_) return;
  if (permille < 0) permille = 0;
  if (permille > 1000) permille = 1000;
  const int32_t pct = permille / 10;
  if (pct == last_) return;
  last_ = pct;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(permille * kWidth / 1000);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\rloading [%s] %3d%%", bar, static_cast<int>(pct));
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);  // carriage return + erase line
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace cli
