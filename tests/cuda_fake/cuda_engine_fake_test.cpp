// The CUDA engine's plumbing on a machine without a GPU, through the fake kernel library
// (tests/fake_kernels: host memory, kernels that only check their arguments): device
// selection, weight upload, session creation, the decode graph (uncaptured warm-up step,
// one capture, replays) and the fallback when capture fails, and the backend's fusions.
// The numbers are meaningless here; tests/gpu checks them on a real GPU.
// Its own binary: the process-wide kernel library must be the fake one from the start.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

#include "common/log.h"
#include "common/test_models.h"
#include "unit/gguf_builder.h"
#include "engine/cuda/kernel_library.h"
#include "model/forward_pool.h"
#include "model/model.h"
#include "runtime/session.h"

namespace zf {
namespace {

const int kFakeEnv = (setenv("ZF_KERNELS_PATH", ZF_FAKE_KERNELS_DIR, 0), 0);

// Lines the fake library traced since the last call, counted.
std::map<std::string, int> ReadTrace(const std::string& path) {
  std::map<std::string, int> n;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) ++n[line];
  std::remove(path.c_str());
  return n;
}

class CudaEngineFake : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)kFakeEnv;
    path_ = testing::ModelPath("smollm2");
    if (path_.empty()) GTEST_SKIP() << "smollm2 model not present (scripts/fetch_models.sh)";
    // One file per test process: ctest runs these tests in parallel.
    trace_ = ::testing::TempDir() + "/fake_zfk_trace_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + std::to_string(getpid()) + ".txt";
    std::remove(trace_.c_str());
    setenv("FAKE_ZFK_LOG", trace_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FAKE_ZFK_LOG");
    unsetenv("FAKE_ZFK_GRAPH_FAIL");
  }

  // Loads on `device`, evaluates a 3-token prompt and `decode` single tokens.
  void Run(model::Device device, int decode, model::Device* used) {
    model::LoadOptions o;
    o.device = device;
    std::unique_ptr<model::Model> m;
    Status s = model::Model::Load(path_, o, &m);
    ASSERT_TRUE(s.ok()) << s.message();
    *used = m->device();
    std::unique_ptr<rt::Session> sess;
    rt::SessionOptions so;
    so.n_ctx = 64;
    s = rt::Session::Create(*m, so, &sess);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<float> logits(size_t(m->desc().n_vocab));
    const int32_t prompt[] = {1, 2, 3};
    ASSERT_TRUE(sess->Eval(prompt, 3, logits.data()).ok());
    for (int i = 0; i < decode; ++i) {
      const int32_t tok = 4 + i;
      s = sess->Eval(&tok, 1, logits.data());
      ASSERT_TRUE(s.ok()) << s.message();
    }
  }

  std::string path_, trace_;
};

TEST_F(CudaEngineFake, DecodeIsCapturedOnceThenReplayed) {
  model::Device used;
  Run(model::Device::kCuda, 4, &used);
  EXPECT_EQ(used, model::Device::kCuda);
  auto n = ReadTrace(trace_);
  // Decode step 1 runs uncaptured (sizes buffers), step 2 is captured and launched, 3-4 replay.
  EXPECT_EQ(n["graph_begin"], 1);
  EXPECT_EQ(n["graph_end"], 1);
  EXPECT_EQ(n["graph_launch"], 3);
  EXPECT_EQ(n["get_rows"], 2);  // prompt + the uncaptured first decode step
  EXPECT_EQ(n["captured get_rows"], 1);
  // Fusions: every residual add merged into the following RMSNorm in the captured step.
  EXPECT_GT(n["captured add_rms_norm"], 0);
  EXPECT_EQ(n["captured add"], 0);
}

// A session keeps its forward context (logits on the device, its graph); when it ends, the next
// session takes that context and its graph, recorded on the old session's KV cache, is not
// replayed: the step is recorded again on the new cache.
TEST_F(CudaEngineFake, NextSessionOnTheContextRecordsItsOwnGraph) {
  model::LoadOptions o;
  o.device = model::Device::kCuda;
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path_, o, &m).ok());
  std::vector<float> logits(size_t(m->desc().n_vocab));
  for (int session = 0; session < 2; ++session) {
    std::unique_ptr<rt::Session> sess;
    rt::SessionOptions so;
    so.n_ctx = 64;
    ASSERT_TRUE(rt::Session::Create(*m, so, &sess).ok());
    const int32_t prompt[] = {1, 2, 3};
    ASSERT_TRUE(sess->Eval(prompt, 3, logits.data()).ok());
    for (int i = 0; i < 4; ++i) {
      const int32_t tok = 4 + i;
      ASSERT_TRUE(sess->Eval(&tok, 1, logits.data()).ok());
    }
  }
  EXPECT_EQ(m->forwards()->size(), 1u) << "the second session reuses the first one's context";
  auto n = ReadTrace(trace_);
  EXPECT_EQ(n["graph_begin"], 2) << "each session's decode step recorded on its own cache";
  EXPECT_EQ(n["graph_launch"], 6);
}

TEST_F(CudaEngineFake, CaptureFailureRunsTheStepUncapturedAndStopsCapturing) {
  setenv("FAKE_ZFK_GRAPH_FAIL", "1", 1);
  model::Device used;
  Run(model::Device::kCuda, 4, &used);
  auto n = ReadTrace(trace_);
  EXPECT_EQ(n["graph_begin"], 1);  // tried once, never again
  EXPECT_EQ(n["graph_launch"], 0);
  EXPECT_EQ(n["get_rows"], 5);     // prompt + 4 decode steps, all executed uncaptured
}

TEST_F(CudaEngineFake, AutoPicksTheGpuAndCpuStaysOnTheCpu) {
  model::Device used;
  Run(model::Device::kAuto, 1, &used);
  EXPECT_EQ(used, model::Device::kCuda);
  ReadTrace(trace_);
  Run(model::Device::kCpu, 1, &used);
  EXPECT_EQ(used, model::Device::kCpu);
  EXPECT_TRUE(ReadTrace(trace_).empty());  // the CPU engine never touched the library
}

TEST_F(CudaEngineFake, KvCacheF32IsRefusedOnTheGpu) {
  model::LoadOptions o;
  o.device = model::Device::kCuda;
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path_, o, &m).ok());
  rt::SessionOptions so;
  so.n_ctx = 32;
  so.kv_type = engine::KvType::kF32;
  std::unique_ptr<rt::Session> sess;
  Status s = rt::Session::Create(*m, so, &sess);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.message();
}

// A tiny gpt-oss (zero weights: only the description matters here), in its converter's layout.
std::string WriteTinyGptOss() {
  using namespace gguf::testutil;  // NOLINT: test builder vocabulary
  const std::string a = "gpt-oss";
  const int64_t E = 32, H = 2, hd = 16, n_exp = 4, F = 32, V = 8;
  GgufBuilder b;
  b.Kv("general.architecture", val::Str(a))
      .Kv(a + ".embedding_length", val::U32(uint32_t(E)))
      .Kv(a + ".block_count", val::U32(2))
      .Kv(a + ".feed_forward_length", val::U32(uint32_t(F)))
      .Kv(a + ".expert_feed_forward_length", val::U32(uint32_t(F)))
      .Kv(a + ".attention.head_count", val::U32(uint32_t(H)))
      .Kv(a + ".attention.head_count_kv", val::U32(1))
      .Kv(a + ".attention.key_length", val::U32(uint32_t(hd)))
      .Kv(a + ".attention.value_length", val::U32(uint32_t(hd)))
      .Kv(a + ".attention.sliding_window", val::U32(4))
      .Kv(a + ".expert_count", val::U32(uint32_t(n_exp)))
      .Kv(a + ".expert_used_count", val::U32(2));
  std::vector<std::string> tokens;
  for (int64_t i = 0; i < V; ++i) tokens.push_back("\xE2\x96\x81t" + std::to_string(i));
  b.Kv("tokenizer.ggml.model", val::Str("llama")).Kv("tokenizer.ggml.tokens", val::StrArr(tokens));
  const auto add = [&](const std::string& name, std::vector<int64_t> ne) {
    TensorSpec t;
    t.name = name;
    t.type = kTF32;
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    t.ne = std::move(ne);
    t.data.assign(size_t(n) * 4, 0);
    b.Tensor(t);
  };
  add("token_embd.weight", {E, V});
  add("output_norm.weight", {E});
  add("output.weight", {E, V});
  for (int il = 0; il < 2; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    for (const char* n : {"attn_norm.weight", "post_attention_norm.weight", "attn_output.bias"}) add(p + n, {E});
    add(p + "attn_q.weight", {E, H * hd});
    add(p + "attn_q.bias", {H * hd});
    for (const char* n : {"attn_k", "attn_v"}) {
      add(p + n + ".weight", {E, hd});
      add(p + n + ".bias", {hd});
    }
    add(p + "attn_output.weight", {H * hd, E});
    add(p + "attn_sinks.weight", {H});
    add(p + "ffn_gate_inp.weight", {E, n_exp});
    add(p + "ffn_gate_inp.bias", {n_exp});
    for (const char* n : {"ffn_gate_exps", "ffn_up_exps"}) {
      add(p + n + ".weight", {E, F, n_exp});
      add(p + n + ".bias", {F, n_exp});
    }
    add(p + "ffn_down_exps.weight", {F, E, n_exp});
    add(p + "ffn_down_exps.bias", {E, n_exp});
  }
  const std::vector<uint8_t> bytes = b.Build();
  const std::string path = ::testing::TempDir() + "/tiny_gpt_oss_" + std::to_string(getpid()) + ".gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

// The CUDA engine lacks gpt-oss's ops: AUTO falls back to the CPU with an INFO line naming them,
// an explicit CUDA request is refused with the same names.
TEST(CudaEngineFakeOps, GptOssFallsBackToTheCpuNamingTheMissingOps) {
  (void)kFakeEnv;
  const std::string path = WriteTinyGptOss();
  static std::string logged;
  logged.clear();
  SetLogSink([](void*, int32_t, const char* msg) -> int32_t { logged += std::string(msg) + "\n"; return 0; }, nullptr);
  SetLogLevel(LogLevel::kInfo);
  model::LoadOptions o;
  o.device = model::Device::kAuto;
  std::unique_ptr<model::Model> m;
  Status s = model::Model::Load(path, o, &m);
  SetLogSink(nullptr, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m->device(), model::Device::kCpu);
  for (const char* op : {"attention sinks", "clamped SwiGLU", "mixture of experts", "using the CPU engine"}) {
    EXPECT_NE(logged.find(op), std::string::npos) << "the log does not name '" << op << "':\n" << logged;
  }
  o.device = model::Device::kCuda;
  s = model::Model::Load(path, o, &m);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("attention sinks"), std::string::npos) << s.message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace zf
