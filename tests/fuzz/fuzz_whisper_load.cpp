// Whisper's inputs: the ggml .bin reader and the model binder (first byte even; the rest is the
// file), and WAV decoding (first byte odd). Findings are crashes, sanitizer reports, or a
// success that breaks the reader's own promises (tensor bytes inside the file, sizes that match).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "speech/wav.h"
#include "speech/whisper_file.h"
#include "speech/whisper_model.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "broken invariant: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  if ((data[0] & 1) != 0) {
    std::vector<float> pcm;
    const zf::Status s = zf::speech::DecodeWav(body, n, &pcm);
    Check(s.ok() || !s.message().empty(), "WAV error has a message");
    if (s.ok()) Check(pcm.size() <= n * 16 + 16, "decoded samples bounded by the input");
    return 0;
  }
  std::unique_ptr<zf::speech::WhisperFile> f;
  const zf::Status s = zf::speech::WhisperFile::FromMemory(body, n, &f);
  Check(s.ok() == (f != nullptr), "file iff OK");
  if (!s.ok()) {
    Check(!s.message().empty() && s.code() == zf::Code::kFormat, "format error with a message");
    return 0;
  }
  size_t total = 0;
  for (const auto& kv : f->tensors()) total += kv.second.nbytes;
  Check(total <= n, "tensor bytes inside the file");
  Check(f->mel_filters().size() == size_t(f->hparams().n_mels) * 201, "filter bank size");
  std::unique_ptr<zf::speech::WhisperModel> m;
  const zf::Status ms = zf::speech::WhisperModel::FromFile(*f, &m);
  Check(ms.ok() == (m != nullptr), "model iff OK");
  Check(ms.ok() || !ms.message().empty(), "bind error has a message");
  return 0;
}
