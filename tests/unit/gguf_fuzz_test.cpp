// Deterministic mutation fuzzing of the GGUF reader (GoogleTest form, part of
// zerfoo_unit_tests). Valid seed files from gguf_builder.h are mutated with a fixed-seed RNG
// (bit flips, byte overwrites, extreme values in u32/u64 fields, inserted/deleted/duplicated
// bytes, truncation). Every parse must succeed or fail with kFormat, never crash; a successful
// parse is walked completely (every value formatted, every getter called, the first and last
// byte of every tensor read) from an exact-size heap copy, so ASan catches any over-read.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "unit/gguf_builder.h"

namespace zf::gguf {
namespace {

using namespace testutil;  // NOLINT

struct Seed {
  std::vector<uint8_t> bytes;
  Layout layout;
};

std::vector<Seed> Seeds() {
  std::vector<Seed> seeds;
  auto add = [&](const GgufBuilder& b) {
    Seed s;
    s.bytes = b.Build(&s.layout);
    seeds.push_back(std::move(s));
  };
  {
    GgufBuilder b;
    b.Kv("general.architecture", val::Str("llama"))
        .Kv("llama.block_count", val::U32(2))
        .Kv("llama.rope.freq_base", val::F32(10000.f))
        .Kv("flag", val::Bool(true))
        .Tensor("a", kTF32, {4, 2})
        .Tensor("b", kTQ8_0, {32, 2})
        .Tensor("c", kTF16, {3});
    add(b);
  }
  {
    GgufBuilder b(2);
    b.Kv("tokenizer.ggml.tokens", val::StrArr({"<s>", "</s>", "a", "\xE2\x82\xAC"}))
        .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, {0.f, -1.f, -2.5f, 3.f}))
        .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, {3, 3, 1, 1}))
        .Kv("nested", val::Arr(kArray, {val::ArrOf<int8_t>(kI8, {1, -1}), val::StrArr({"x"}),
                                        val::Arr(kArray, {val::ArrOf<uint64_t>(kU64, {9})})}))
        .Kv("u64", val::U64(1) ).Kv("i64", val::I64(-1)).Kv("f64", val::F64(0.5))
        .Kv("u16", val::U16(3)).Kv("i16", val::I16(-3)).Kv("u8", val::U8(1))
        .Tensor("t", kTF32, {2});
    add(b);
  }
  {
    GgufBuilder b;
    b.Alignment(64)
        .Kv("general.name", val::Str("q"))
        .Tensor("q8", kTQ8_0, {64})
        .Tensor("q4k", kTQ4_K, {256})
        .Tensor("bf", kTBF16, {5, 1, 1, 2});
    add(b);
  }
  {
    GgufBuilder b;
    b.Alignment(8).Kv("only", val::ArrOf<uint8_t>(kBool, {1, 0})).PadWithoutTensors(true);
    add(b);
  }
  return seeds;
}

uint64_t Extreme(std::mt19937_64& rng, uint64_t file_size) {
  static const uint64_t kValues[] = {
      0, 1, 2, 3, 4, 5, 7, 8, 12, 13, 28, 31, 32, 33, 63, 64,
      0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFFu,
      uint64_t(1) << 32, uint64_t(1) << 40, (uint64_t(1) << 61) + 1, uint64_t(1) << 62,
      uint64_t(1) << 63, std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max() - 31,
      uint64_t(std::numeric_limits<int64_t>::max()),
  };
  const size_t k = rng() % (std::size(kValues) + 4);
  if (k < std::size(kValues)) return kValues[k];
  switch (k - std::size(kValues)) {
    case 0: return file_size;
    case 1: return file_size + 1;
    case 2: return file_size - 1;
    default: return rng();
  }
}

template <typename T>
void Put(std::vector<uint8_t>* b, size_t pos, T v) {
  if (pos + sizeof(T) <= b->size()) std::memcpy(b->data() + pos, &v, sizeof(T));
}

void Mutate(std::mt19937_64& rng, const Seed& seed, std::vector<uint8_t>* b) {
  const int n_mut = 1 + int(rng() % 3);
  for (int m = 0; m < n_mut; ++m) {
    const size_t size = b->size();
    const size_t pos = size ? rng() % size : 0;
    switch (rng() % 10) {
      case 0:  // flip a bit
        if (size) (*b)[pos] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (size) (*b)[pos] = uint8_t(rng());
        break;
      case 2:  // extreme u64 in a known u64 field (counts, lengths, dims, offsets)
        if (!seed.layout.u64_fields.empty()) {
          Put<uint64_t>(b, seed.layout.u64_fields[rng() % seed.layout.u64_fields.size()], Extreme(rng, size));
        }
        break;
      case 3:  // extreme u32 in a known u32 field (types, n_dims)
        if (!seed.layout.u32_fields.empty()) {
          const size_t f = seed.layout.u32_fields[rng() % seed.layout.u32_fields.size()];
          const uint64_t v = rng() % 2 ? Extreme(rng, size) : rng() % 40;
          Put<uint32_t>(b, f, uint32_t(v));
        }
        break;
      case 4:  // extreme u64 anywhere
        Put<uint64_t>(b, pos, Extreme(rng, size));
        break;
      case 5: {  // insert 1..16 random bytes
        const size_t n = 1 + rng() % 16;
        std::vector<uint8_t> ins(n);
        for (auto& x : ins) x = uint8_t(rng());
        b->insert(b->begin() + pos, ins.begin(), ins.end());
        break;
      }
      case 6: {  // delete 1..16 bytes
        const size_t n = std::min<size_t>(size - pos, 1 + rng() % 16);
        b->erase(b->begin() + pos, b->begin() + pos + n);
        break;
      }
      case 7: {  // duplicate a chunk in place
        if (!size) break;
        const size_t n = std::min<size_t>(size - pos, 1 + rng() % 32);
        std::vector<uint8_t> chunk(b->begin() + pos, b->begin() + pos + n);
        b->insert(b->begin() + pos, chunk.begin(), chunk.end());
        break;
      }
      case 8:  // truncate
        b->resize(pos);
        break;
      default: {  // small integer into a u32 field: nearby valid type ids / dims / versions
        if (!seed.layout.u32_fields.empty()) {
          const size_t f = seed.layout.u32_fields[rng() % seed.layout.u32_fields.size()];
          Put<uint32_t>(b, f, uint32_t(rng() % 16));
        } else if (size >= 8) {
          Put<uint32_t>(b, 4, uint32_t(rng() % 6));
        }
        break;
      }
    }
  }
}

// Walks a successfully parsed file; returns a checksum so nothing is optimized away.
uint64_t Walk(const GgufFile& f, const uint8_t* base, size_t size) {
  uint64_t sum = 0;
  for (const KeyValue& kv : f.metadata()) {
    EXPECT_FALSE(kv.key.empty());
    EXPECT_GE(reinterpret_cast<const uint8_t*>(kv.key.data()), base);
    EXPECT_LE(reinterpret_cast<const uint8_t*>(kv.key.data()) + kv.key.size(), base + size);
    EXPECT_EQ(f.Find(kv.key), &kv.value) << kv.key;  // keys are unique
    sum += GgufFile::ValueToString(kv.value).size();
    uint32_t u;
    int32_t i;
    float x;
    bool b;
    std::string_view s;
    std::vector<std::string_view> ss;
    std::vector<float> fs;
    std::vector<int32_t> is;
    for (const Status& st : {f.GetU32(kv.key, &u), f.GetI32(kv.key, &i), f.GetF32(kv.key, &x), f.GetBool(kv.key, &b),
                             f.GetString(kv.key, &s), f.GetStringArray(kv.key, &ss), f.GetF32Array(kv.key, &fs),
                             f.GetI32Array(kv.key, &is)}) {
      EXPECT_TRUE(st.ok() || st.code() == Code::kFormat) << st.message();
    }
    sum += ss.size() + fs.size() + is.size();
  }
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_EQ(f.FindTensor(t.name), &t);
    EXPECT_GE(t.n_dims, 1u);
    EXPECT_LE(t.n_dims, 4u);
    EXPECT_GE(t.n_elements(), 0);
    EXPECT_EQ(t.offset % f.alignment(), 0u);
    EXPECT_GE(t.data, base);
    EXPECT_LE(t.nbytes, size);
    EXPECT_LE(uint64_t(t.data - base), size - t.nbytes);
    if (t.nbytes > 0) {
      const volatile uint8_t* d = t.data;
      sum += d[0] + d[t.nbytes - 1];
    }
  }
  return sum;
}

TEST(GgufFuzz, MutatedSeedsNeverCrash) {
  const std::vector<Seed> seeds = Seeds();
  // Seeds themselves parse.
  for (const Seed& s : seeds) {
    std::unique_ptr<GgufFile> f;
    Status st = GgufFile::FromMemory(s.bytes.data(), s.bytes.size(), &f);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  std::mt19937_64 rng(0x5eed2024u);
  const int kIterations = 20000;
  int ok = 0, failed = 0;
  uint64_t sum = 0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint8_t> bytes;
  for (int it = 0; it < kIterations; ++it) {
    const Seed& seed = seeds[size_t(it) % seeds.size()];
    bytes = seed.bytes;
    Mutate(rng, seed, &bytes);
    // Exact-size heap copy: any read past the end is an ASan error.
    std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes.size() ? bytes.size() : 1]);
    if (!bytes.empty()) std::memcpy(buf.get(), bytes.data(), bytes.size());
    std::unique_ptr<GgufFile> f;
    const Status st = GgufFile::FromMemory(buf.get(), bytes.size(), &f);
    if (st.ok()) {
      ASSERT_NE(f, nullptr);
      sum += Walk(*f, buf.get(), bytes.size());
      ++ok;
    } else {
      ASSERT_EQ(st.code(), Code::kFormat) << "iteration " << it << ": " << st.message();
      ASSERT_FALSE(st.message().empty()) << "iteration " << it;
      ASSERT_TRUE(f == nullptr);
      ++failed;
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failure at iteration " << it;
      break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Both outcomes must be exercised, or the mutations are too weak / too destructive.
  EXPECT_GT(ok, kIterations / 50);
  EXPECT_GT(failed, kIterations / 2);
  RecordProperty("parsed_ok", ok);
  RecordProperty("rejected", failed);
  std::printf("gguf fuzz: %d iterations, %d parsed, %d rejected, %.2f s (checksum %llu)\n", kIterations, ok, failed,
              secs, static_cast<unsigned long long>(sum));
}

}  // namespace
}  // namespace zf::gguf
