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

#include "common/test_models.h"
#include "engine/cuda/kernel_library.h"
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

}  // namespace
}  // namespace zf
