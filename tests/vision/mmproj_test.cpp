// vision/mmproj: the synthesized Gemma 3 projector's hyperparameters, the check against the
// language model's width, and the errors for files that are not (or not wholly) a gemma3
// projector: each made from the good file by an equal-length byte edit of a key, a value or a
// tensor name, so that the rest of the GGUF stays valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "vision/mmproj.h"

namespace zf::vision {
namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

const std::string kF32 = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma3-f32.gguf";

// Loads bytes with the first occurrence of `from` replaced by `to` (same length).
Status LoadEdited(std::vector<uint8_t> bytes, const std::string& from, const std::string& to) {
  EXPECT_EQ(from.size(), to.size());
  auto it = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
  EXPECT_NE(it, bytes.end()) << from;
  if (it != bytes.end()) std::copy(to.begin(), to.end(), it);
  std::unique_ptr<gguf::GgufFile> f;
  Status s = gguf::GgufFile::FromMemory(bytes.data(), bytes.size(), &f);
  if (!s.ok()) return s;
  std::unique_ptr<Mmproj> m;
  return Mmproj::FromGguf(std::move(f), &m);
}

TEST(Mmproj, Gemma3Hparams) {
  std::unique_ptr<Mmproj> m;
  Status s = Mmproj::Load(kF32, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  const VisionHparams& hp = m->hparams();
  EXPECT_EQ(hp.projector, "gemma3");
  EXPECT_EQ(hp.image_size, 896);
  EXPECT_EQ(hp.patch_size, 14);
  EXPECT_EQ(hp.patches_per_side(), 64);
  EXPECT_EQ(hp.n_merge, 4);
  EXPECT_EQ(hp.n_tokens(), 256);
  EXPECT_EQ(hp.proj_width, 640);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_layer, 2);
  EXPECT_FLOAT_EQ(hp.mean[0], 0.5f);
  EXPECT_FLOAT_EQ(hp.std[2], 0.5f);
  EXPECT_EQ(m->blocks.size(), 2u);
  EXPECT_EQ(m->patch.in, 3 * 14 * 14);
  EXPECT_EQ(m->proj.out, 640);
  EXPECT_EQ(m->proj.in, 64);
}

TEST(Mmproj, BelongsToTheLanguageModel) {
  std::unique_ptr<Mmproj> m;
  ASSERT_TRUE(Mmproj::Load(kF32, &m).ok());
  EXPECT_TRUE(m->CheckLanguageModel(640).ok());
  const Status s = m->CheckLanguageModel(576);  // SmolLM2-135M's width
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("640"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("576"), std::string::npos) << s.message();
}

TEST(Mmproj, ErrorsNameTheField) {
  const std::vector<uint8_t> good = ReadFile(kF32);
  ASSERT_FALSE(good.empty());
  struct Case {
    std::string from, to;
    const char* expect;  // in the message
  };
  using namespace std::string_literals;
  const Case cases[] = {
      {"\x06\0\0\0\0\0\0\0gemma3"s, "\x06\0\0\0\0\0\0\0qwen25"s, "clip.projector_type 'qwen25'"},  // the value, after its length
      {"clip.use_gelu", "clip.use_gelX", "clip.use_gelu"},
      {"clip.vision.patch_size", "clip.vision.patch_sizX", "clip.vision.patch_size: missing"},
      {"clip.vision.image_mean", "clip.vision.image_meaX", "clip.vision.image_mean"},
      {"mm.soft_emb_norm.weight", "mm.soft_emb_norm.weighX", "'mm.soft_emb_norm.weight' is missing"},
      {"v.blk.1.attn_k.weight", "v.blk.1.attn_K.weight", "'v.blk.1.attn_k.weight' is missing"},
  };
  for (const Case& c : cases) {
    const Status s = LoadEdited(good, c.from, c.to);
    EXPECT_FALSE(s.ok()) << c.from;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.from << ": " << s.message();
  }
  // A language model is not a projector.
  const Status s = LoadEdited(good, "clip", "llam");
  EXPECT_NE(s.message().find("general.architecture"), std::string::npos) << s.message();
}

TEST(Mmproj, Idefics3ErrorsNameTheField) {
  const std::vector<uint8_t> good = ReadFile(std::string(ZF_VISION_MODELS_DIR) + "/mmproj-idefics3-f16.gguf");
  ASSERT_FALSE(good.empty());
  struct Case {
    std::string from, to;
    const char* expect;
  };
  using namespace std::string_literals;
  const Case cases[] = {
      {"\x08\0\0\0\0\0\0\0idefics3"s, "\x08\0\0\0\0\0\0\0idefics4"s,
       // The list's head (later rows are appended to it).
       "clip.projector_type 'idefics4' is not supported (gemma3, idefics3, pixtral"},
      // Without it libmtmd slices another way (llava-uhd style), not implemented here.
      {"clip.vision.preproc_image_size", "clip.vision.preproc_image_sizX", "clip.vision.preproc_image_size is missing"},
      {"mm.model.fc.weight", "mm.model.fc.weighX", "'mm.model.fc.weight' is missing"},
  };
  for (const Case& c : cases) {
    const Status s = LoadEdited(good, c.from, c.to);
    EXPECT_FALSE(s.ok()) << c.from;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.from << ": " << s.message();
  }
}

}  // namespace
}  // namespace zf::vision
