// The decode loop does not allocate: after the prompt, evaluating one token at a time (the
// steady state of generation) performs no heap allocation. Counted by replacing the global
// operator new in this test binary, which links the core statically.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/session.h"

namespace {
std::atomic<long> g_allocations{0};
std::atomic<bool> g_counting{false};
}  // namespace

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
// Every non-aligned form is replaced, so each allocation and its release stay malloc/free
// (sanitizers check the pairing); the aligned forms keep the library's own pair.
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace zf::rt {
namespace {

class DecodeAlloc : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeAlloc, SingleTokenEvalsDoNotAllocate) {
  ZF_REQUIRE_MODEL(path, GetParam());
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  SessionOptions so;
  so.n_ctx = 128;
  std::unique_ptr<Session> s;
  ASSERT_TRUE(Session::Create(*m, so, &s).ok());
  std::vector<float> logits(size_t(m->tokenizer().n_vocab()));
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(s->Eval(prompt.data(), prompt.size(), logits.data()).ok());
  int32_t tok = 11;
  ASSERT_TRUE(s->Eval(&tok, 1, logits.data()).ok());  // first decode step may size buffers
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 16; ++i) {
    tok = 12 + i;
    ASSERT_TRUE(s->Eval(&tok, 1, logits.data()).ok());
  }
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0) << "heap allocations in 16 decode steps";
}

INSTANTIATE_TEST_SUITE_P(RealModels, DecodeAlloc, ::testing::Values("gemma3", "smollm2"));

}  // namespace
}  // namespace zf::rt
