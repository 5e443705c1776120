#include "speech/decode_batcher.h"

namespace zf::speech {

Status DecodeBatcher::Decode(WhisperRunner& mine, WhisperRunner::Row* rows, int32_t n) {
  for (int32_t i = 0; i < n; ++i) rows[i].cross = &mine;
  // A request's own rows are checked alone, so that one bad request cannot fail the others.
  ZF_RETURN_IF_ERROR(mine.CheckRows(rows, n));
  Job job;
  job.rows = rows;
  job.n = n;
  std::unique_lock<std::mutex> lock(mu_);
  pending_.push_back(&job);
  for (;;) {
    if (job.done) return job.status;
    if (!leading_) break;
    cv_.wait(lock);
  }
  // Lead: every job waiting now (this one included) as one pass; jobs handed in meanwhile
  // wait for the next pass, led by one of their threads.
  leading_ = true;
  std::vector<Job*> batch;
  batch.swap(pending_);
  lock.unlock();
  std::vector<WhisperRunner::Row> joined;
  for (const Job* j : batch) joined.insert(joined.end(), j->rows, j->rows + j->n);
  const Status s = mine.DecodeBatch(joined.data(), int32_t(joined.size()));
  lock.lock();
  ++passes_;
  jobs_ += int64_t(batch.size());
  for (Job* j : batch) {
    j->status = s;
    j->done = true;
  }
  leading_ = false;
  cv_.notify_all();
  return job.status;
}

int64_t DecodeBatcher::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

int64_t DecodeBatcher::jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_;
}

}  // namespace zf::speech
