// How the CPU engine's light ops (elementwise, per-row, per-channel) share out their work: on
// the calling thread unless large (a prefill step's rows: hundreds of microseconds on one thread
// while the others wait for the next product), else over the pool. Split, every element is
// computed as on one thread, so the split never changes a bit.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/thread_pool.h"

namespace zf::engine {

// Work below this many elements runs on the caller (less than a pool round trip).
constexpr int64_t kSplitElements = int64_t{1} << 16;
// Elementwise chunks of a split, in multiples of kChunk elements (the activations' 256-element
// blocks stay whole, so a split makes the same kernel calls as one thread).
constexpr int64_t kChunk = 256;

// f(b, e) over elements [0, n), in kChunk multiples when split.
template <typename F>
void SplitElements(ThreadPool* pool, int64_t n, F&& f) {
  if (n < kSplitElements || pool->size() == 1) {
    f(int64_t{0}, n);
    return;
  }
  pool->ParallelFor((n + kChunk - 1) / kChunk,
                    [&](int64_t b, int64_t e) { f(b * kChunk, std::min(e * kChunk, n)); });
}

// f(r0, r1) over rows [0, rows) of row_elements each (rows: also channels of a convolution),
// split when all of them hold at least min_elements.
template <typename F>
void SplitRows(ThreadPool* pool, int64_t rows, int64_t row_elements, int64_t min_elements, F&& f) {
  if (rows < 2 || rows * row_elements < min_elements || pool->size() == 1) {
    f(int64_t{0}, rows);
    return;
  }
  pool->ParallelFor(rows, [&](int64_t b, int64_t e) { f(b, e); });
}

}  // namespace zf::engine
