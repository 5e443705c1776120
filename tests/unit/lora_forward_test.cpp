// LoRA in the forward pass, deterministically: one batched decode step (Forward::RunBatch) whose
// rows carry different adapter sets (none, a, b, a + b, and a and a + b again from plans of their
// own, which the step groups with the first ones' rows) gives each row the logits a one-token
// Forward::Run of that sequence alone gives, bit for bit, step after step; and a LoraPlan leaves
// out adapters with scale 0. SmolLM2 with random adapters (scripts/synth_lora.py).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/test_models.h"
#include "engine/backend.h"
#include "model/forward.h"
#include "model/forward_pool.h"
#include "model/lora.h"
#include "model/model.h"

namespace zf::model {
namespace {

std::string Synth(const std::string& base, const std::string& name, const std::string& args) {
  const std::string out = ::testing::TempDir() + "/unit-lora-" + name + ".gguf";
  const std::string cmd =
      "python3 '" ZF_SOURCE_DIR "/scripts/synth_lora.py' '" + base + "' '" + out + "' " + args + " >/dev/null";
  return std::system(cmd.c_str()) == 0 ? out : std::string();
}

TEST(LoraForward, MixedAdaptersInOneBatchedStepEqualAlone) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<Model> m;
  ASSERT_TRUE(Model::Load(path, LoadOptions(), &m).ok());
  const std::string a_path = Synth(path, "a", "--seed 1");
  const std::string b_path = Synth(path, "b", "--seed 2 --type f16 --rank 4 --alpha 8 --targets q,v,down");
  ASSERT_FALSE(a_path.empty() || b_path.empty());
  std::unique_ptr<LoraAdapter> a, b;
  Status st = LoraAdapter::Load(*m, a_path, &a);
  ASSERT_TRUE(st.ok()) << st.message();
  st = LoraAdapter::Load(*m, b_path, &b);
  ASSERT_TRUE(st.ok()) << st.message();
  const ModelDesc& d = m->desc();
  constexpr int kSeqs = 6;
  const LoraPlan plans[kSeqs] = {LoraPlan({}, {}, d.n_layer), LoraPlan({a.get()}, {1.0f}, d.n_layer),
                                 LoraPlan({b.get()}, {0.7f}, d.n_layer),
                                 LoraPlan({a.get(), b.get()}, {0.5f, 1.0f}, d.n_layer),
                                 LoraPlan({a.get()}, {1.0f}, d.n_layer),
                                 LoraPlan({a.get(), b.get()}, {0.5f, 1.0f}, d.n_layer)};
  EXPECT_EQ(plans[1].key(), plans[4].key());  // one group in a step: each adapter read once for both rows
  EXPECT_TRUE(plans[0].empty());
  EXPECT_TRUE(LoraPlan({a.get()}, {0.0f}, d.n_layer).empty());  // scale 0: left out
  EXPECT_NE(plans[1].key(), plans[3].key());

  const int32_t threads = m->default_threads();
  ForwardPool::Lease solo, batch;
  ASSERT_TRUE(m->forwards()->Acquire(ForwardPool::Key{threads, true}, &solo).ok());
  ASSERT_TRUE(m->forwards()->Acquire(ForwardPool::Key{threads, true, kSeqs, kSeqs}, &batch).ok());
  ASSERT_TRUE(batch.exact());
  const int32_t n_ctx = 64;
  const float* rope = Forward::RopeFactors(*m, n_ctx);
  std::unique_ptr<engine::KvCache> kv_solo[kSeqs], kv_batch[kSeqs];
  const size_t nv = size_t(d.n_vocab);
  std::vector<float> logits_solo(kSeqs * nv), logits_batch(kSeqs * nv);
  int32_t next[kSeqs];
  for (int i = 0; i < kSeqs; ++i) {
    for (auto* kv : {&kv_solo[i], &kv_batch[i]}) {
      ASSERT_TRUE(solo.backend().CreateKv(d.NKvLayers(), n_ctx, d.MaxKWidth(), d.MaxVWidth(), engine::KvType::kF16, kv).ok());
    }
    const std::vector<int32_t> prompt = {1, 504 + i, 3426, 314, 253 + 7 * i, 1379};
    const Forward::SeqState s{kv_solo[i].get(), nullptr, rope, &plans[i]};
    const Forward::SeqState t{kv_batch[i].get(), nullptr, rope, &plans[i]};
    solo.forward().Run(s, prompt.data(), int32_t(prompt.size()), 0, logits_solo.data() + size_t(i) * nv, nullptr);
    solo.forward().Run(t, prompt.data(), int32_t(prompt.size()), 0, nullptr, nullptr);
    next[i] = int32_t(std::max_element(logits_solo.begin() + std::ptrdiff_t(i * nv),
                                       logits_solo.begin() + std::ptrdiff_t((i + 1) * nv)) -
                      (logits_solo.begin() + std::ptrdiff_t(i * nv)));
  }
  for (int32_t step = 0; step < 8; ++step) {
    const int32_t pos = 6 + step;
    Forward::Seq seqs[kSeqs];
    int32_t toks[kSeqs];
    for (int i = 0; i < kSeqs; ++i) {
      const Forward::SeqState s{kv_solo[i].get(), nullptr, rope, &plans[i]};
      solo.forward().Run(s, &next[i], 1, pos, logits_solo.data() + size_t(i) * nv, nullptr);
      toks[i] = next[i];
      seqs[i] = Forward::Seq{kv_batch[i].get(), pos, 1, logits_batch.data() + size_t(i) * nv, nullptr, rope, nullptr,
                             &plans[i]};
    }
    batch.forward().RunBatch(toks, seqs, kSeqs);
    for (int i = 0; i < kSeqs; ++i) {
      ASSERT_EQ(std::memcmp(logits_batch.data() + size_t(i) * nv, logits_solo.data() + size_t(i) * nv, nv * sizeof(float)), 0)
          << "row " << i << " (adapter set " << i << "), step " << step;
      const float* l = logits_solo.data() + size_t(i) * nv;
      next[i] = int32_t(std::max_element(l, l + nv) - l);
    }
  }
  // The sets differ: the rows' logits are not all the same.
  EXPECT_NE(std::memcmp(logits_solo.data(), logits_solo.data() + nv, nv * sizeof(float)), 0);
}

}  // namespace
}  // namespace zf::model
