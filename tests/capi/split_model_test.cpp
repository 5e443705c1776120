// A split model (PREFIX-00001-of-00003.gguf ..., written by gguf-py's split writer, the one the
// reference converter uses; make_embed_models.sh) loads from its first part and computes exactly
// what the single file computes; a later part given alone is refused with a message that names
// the first part.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

std::string SplitPart(int part) {
  return std::string(ZF_EMBED_MODELS_DIR) + "/split/smollm2-0000" + std::to_string(part) + "-of-00003.gguf";
}

std::vector<float> Logits(zf_model* m, const zf_model_summary& s) {
  SessionPtr sess = NewSession(m, 256, 2);
  EXPECT_TRUE(sess);
  if (!sess) return {};
  std::vector<float> out;
  std::vector<float> logits(size_t(s.n_vocab));
  const std::vector<int32_t> prompt = {1, 504, 3458, 282, 4649, 314, 253};
  EXPECT_EQ(zf_session_eval(sess.get(), prompt.data(), prompt.size(), logits.data(), logits.size()), ZF_OK);
  out = logits;
  for (int32_t t : {355, 1045, 28}) {
    EXPECT_EQ(zf_session_eval(sess.get(), &t, 1, logits.data(), logits.size()), ZF_OK);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

TEST(SplitModel, LoadsFromItsFirstPartAndComputesWhatTheFileComputes) {
  ZF_REQUIRE_MODEL(whole_path, "smollm2");
  ModelPtr whole = Load(whole_path);
  ModelPtr split = Load(SplitPart(1));
  ASSERT_TRUE(whole);
  ASSERT_TRUE(split) << zf_last_error();
  zf_model_summary a, b;
  std::memset(&a, 0, sizeof a);
  std::memset(&b, 0, sizeof b);
  a.struct_size = b.struct_size = sizeof a;
  ASSERT_EQ(zf_model_info(whole.get(), &a), ZF_OK);
  ASSERT_EQ(zf_model_info(split.get(), &b), ZF_OK);
  EXPECT_EQ(a.n_tensors, b.n_tensors);
  EXPECT_EQ(a.n_params, b.n_params);
  EXPECT_GT(b.file_size, a.file_size * 9 / 10) << "file_size counts every part";
  const std::vector<float> want = Logits(whole.get(), a), got = Logits(split.get(), b);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

TEST(SplitModel, ALaterPartIsRefusedNamingTheFirst) {
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(SplitPart(2).c_str(), nullptr, &m), ZF_ERR_FORMAT);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(zf_last_error()).find("is part 2 of 3 of a split model: load the first part"), std::string::npos)
      << zf_last_error();
}

}  // namespace
