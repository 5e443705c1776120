// Joins the decoder steps of concurrent transcriptions on one model into one pass.
//
// Why: a decoder step reads every decoder weight and the token embedding (~95 MB for base) for
// a handful of rows; two requests decoding at the same time each pay that read. Here a request
// thread hands its step's rows (its prompt, or its beams / samples) to Decode; rows handed in
// while another pass runs wait and go together into the next one, run by one of the waiting
// threads on its own runner (thread pool and buffers), each row with its own request's cache and
// window (cross-attention K/V). Every row's result is what a pass of its own gives
// (WhisperRunner::DecodeBatch is exact per row), so a transcription is the same alone or beside
// others. The pattern of the LM's src/runtime/batcher (one pass for every waiting session),
// without a worker thread: the first waiting caller leads.
//
// Thread-safe: any number of threads, each with its own WhisperRunner on the same model.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "speech/whisper_model.h"

namespace zf::speech {

class DecodeBatcher {
 public:
  // Runs `rows` (their cross-attention over `mine`'s window; set here) in a pass shared with
  // whatever other threads hand in meanwhile; returns when they are done, with their status.
  Status Decode(WhisperRunner& mine, WhisperRunner::Row* rows, int32_t n);

  // Decode calls and passes run so far (fewer passes than calls: steps were joined).
  int64_t jobs() const;
  int64_t passes() const;

 private:
  struct Job {
    const WhisperRunner::Row* rows = nullptr;
    int32_t n = 0;
    Status status;
    bool done = false;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job*> pending_;
  bool leading_ = false;  // a thread is running a pass
  int64_t jobs_ = 0, passes_ = 0;
};

}  // namespace zf::speech
