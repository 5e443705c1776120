// Helpers shared by the libFuzzer targets (doc/testing.md, "Fuzzing").
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace zf::fuzz {

// An in-memory file holding `data` (memfd), loadable by path through /proc/self/fd.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("zf_fuzz", MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    for (size_t done = 0; done < size;) {
      const ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += size_t(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  const char* path() const { return path_.c_str(); }

 private:
  int fd_ = -1;
  std::string path_;
};

inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant violated: %s (last error: %s)\n", what, zf_last_error());
    std::abort();
  }
}

// zf_status values the API documents; anything else (or ZF_ERR_INTERNAL) is a finding. A fuzzed
// file may carry a broken chat template: ZF_ERR_TEMPLATE is a clean answer.
inline void CheckStatus(zf_status s, const char* what) {
  Check(s >= ZF_OK && s <= ZF_ERR_TEMPLATE && s != ZF_ERR_INTERNAL, what);
}

inline void QuietLogs() {
  static bool done = false;
  if (!done) {
    zf_set_log_level(ZF_LOG_NONE);
    done = true;
  }
}

// A model loaded once per process from in-memory GGUF bytes (e.g. zf::testutil::TinyLlamaGguf),
// on the CPU with one thread; the model and its file are kept for the process's life (call it
// from a function-local static).
inline zf_model* LoadOnce(const std::vector<uint8_t>& bytes) {
  static std::vector<std::unique_ptr<MemFile>> files;  // reachable: not a leak
  files.push_back(std::make_unique<MemFile>(bytes.data(), bytes.size()));
  const MemFile* f = files.back().get();
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.device = ZF_DEVICE_CPU;
  p.n_threads = 1;
  zf_model* m = nullptr;
  Check(zf_model_load(f->path(), &p, &m) == ZF_OK, "the tiny model loads");
  return m;
}

}  // namespace zf::fuzz
