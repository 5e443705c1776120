// The sampler's parameters and logits: any parameters the C API accepts (temperature, top_p,
// min_p >= 0, repeat_penalty > 0, any top_k / repeat_last_n / seed) and any logits (NaN and
// infinities included, as a broken model gives) must yield an id in [0, n_vocab).
#include <cmath>
#include <cstring>
#include <vector>

#include "fuzz_common.h"
#include "runtime/sampler.h"

namespace {

template <typename T>
T Take(const uint8_t*& p, const uint8_t* end) {
  T v{};
  if (size_t(end - p) >= sizeof v) {
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
  }
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  zf::rt::SamplerParams sp;
  sp.temperature = Take<float>(p, end);
  sp.top_k = Take<int32_t>(p, end);
  sp.top_p = Take<float>(p, end);
  sp.min_p = Take<float>(p, end);
  sp.repeat_penalty = Take<float>(p, end);
  sp.repeat_last_n = Take<int32_t>(p, end);
  sp.seed = Take<uint64_t>(p, end);
  // The C API's checks (zf_generate): the sampler is only ever given these.
  if (!(sp.temperature >= 0.0f) || !(sp.top_p >= 0.0f) || !(sp.min_p >= 0.0f) || !(sp.repeat_penalty > 0.0f)) return 0;
  const int32_t n_vocab = 1 + Take<uint8_t>(p, end) % 200;
  std::vector<float> logits(size_t(n_vocab), 0.0f);
  for (float& l : logits) l = Take<float>(p, end);
  std::vector<int32_t> history;
  while (p < end) history.push_back(int32_t(Take<uint8_t>(p, end) % n_vocab));
  zf::rt::Sampler s(sp, n_vocab);
  for (int rep = 0; rep < 3; ++rep) {
    const int32_t id = s.Sample(logits.data(), history.data(), history.size());
    zf::fuzz::Check(id >= 0 && id < n_vocab, "sampled id in range");
    history.push_back(id);
  }
  return 0;
}
