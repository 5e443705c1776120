// Tests of src/gguf: round trips of every metadata type and tensor layout written by the
// in-memory builder (gguf_builder.h), typed getters, ValueToString, every class of malformed
// input (must be kFormat with a message naming the problem), truncation at every byte, and
// Open() on real files, missing paths and directories.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "unit/gguf_builder.h"

namespace zf::gguf {
namespace {

using namespace testutil;  // NOLINT

// Parses a copy of `bytes` in an exact-size heap block (so ASan sees any over-read).
struct Parsed {
  std::unique_ptr<uint8_t[]> buf;
  size_t size = 0;
  std::unique_ptr<GgufFile> file;
  Status status;
};

Parsed Parse(const std::vector<uint8_t>& bytes, size_t n = size_t(-1)) {
  Parsed p;
  p.size = std::min(n, bytes.size());
  p.buf.reset(new uint8_t[p.size ? p.size : 1]);
  if (p.size) std::memcpy(p.buf.get(), bytes.data(), p.size);
  p.status = GgufFile::FromMemory(p.buf.get(), p.size, &p.file);
  return p;
}

// Expects kFormat with `needle` in the message and no file.
#define EXPECT_FORMAT_ERROR(bytes, needle)                                              \
  do {                                                                                  \
    Parsed p_ = Parse(bytes);                                                           \
    EXPECT_EQ(p_.status.code(), Code::kFormat) << "message: " << p_.status.message();   \
    EXPECT_NE(p_.status.message().find(needle), std::string::npos)                      \
        << "message '" << p_.status.message() << "' lacks '" << (needle) << "'";        \
    EXPECT_TRUE(p_.file == nullptr);                                                        \
  } while (0)

GgufBuilder Minimal(uint32_t version = 3) {
  GgufBuilder b(version);
  b.Kv("general.architecture", val::Str("llama"));
  return b;
}

// ======================================================================== round trip

TEST(GgufRoundTrip, EveryScalarTypeReadsBackExactly) {
  GgufBuilder b;
  b.Kv("u8", val::U8(200))
      .Kv("i8", val::I8(-100))
      .Kv("u16", val::U16(65535))
      .Kv("i16", val::I16(-32768))
      .Kv("u32", val::U32(4000000000u))
      .Kv("i32", val::I32(-2000000000))
      .Kv("f32", val::F32(0.1f))
      .Kv("bool_t", val::Bool(true))
      .Kv("bool_f", val::Bool(false))
      .Kv("str", val::Str("h\xC3\xA9llo \"world\""))
      .Kv("empty_str", val::Str(""))
      .Kv("u64", val::U64(std::numeric_limits<uint64_t>::max()))
      .Kv("i64", val::I64(std::numeric_limits<int64_t>::min()))
      .Kv("f64", val::F64(1e300));
  const auto bytes = b.Build();
  Parsed p = Parse(bytes);
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  const GgufFile& f = *p.file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.file_size(), bytes.size());
  ASSERT_EQ(f.metadata().size(), 14u);
  EXPECT_TRUE(f.tensors().empty());
  // Order preserved.
  EXPECT_EQ(f.metadata()[0].key, "u8");
  EXPECT_EQ(f.metadata()[13].key, "f64");

  const Value* v = f.Find("u8");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, ValueType::UINT8);
  EXPECT_EQ(v->u, 200u);
  EXPECT_EQ(f.Find("i8")->type, ValueType::INT8);
  EXPECT_EQ(f.Find("i8")->i, -100);
  EXPECT_EQ(f.Find("u16")->u, 65535u);
  EXPECT_EQ(f.Find("i16")->i, -32768);
  EXPECT_EQ(f.Find("u32")->u, 4000000000u);
  EXPECT_EQ(f.Find("i32")->i, -2000000000);
  EXPECT_EQ(f.Find("f32")->type, ValueType::FLOAT32);
  EXPECT_EQ(float(f.Find("f32")->f), 0.1f);
  EXPECT_EQ(f.Find("bool_t")->u, 1u);
  EXPECT_EQ(f.Find("bool_f")->u, 0u);
  EXPECT_EQ(f.Find("str")->type, ValueType::STRING);
  EXPECT_EQ(f.Find("str")->str, "h\xC3\xA9llo \"world\"");
  EXPECT_EQ(f.Find("empty_str")->str, "");
  EXPECT_EQ(f.Find("u64")->u, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.Find("i64")->i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.Find("f64")->f, 1e300);
  EXPECT_EQ(f.Find("missing"), nullptr);
  EXPECT_EQ(f.Find(""), nullptr);
  // Strings point into the caller's buffer (no copies).
  const auto* s = reinterpret_cast<const char*>(p.buf.get());
  EXPECT_GE(f.Find("str")->str.data(), s);
  EXPECT_LT(f.Find("str")->str.data(), s + p.size);
}

TEST(GgufRoundTrip, Version2And3AreAccepted) {
  for (uint32_t version : {2u, 3u}) {
    auto bytes = Minimal(version).Tensor("w", kTF32, {4}).Build();
    Parsed p = Parse(bytes);
    ASSERT_TRUE(p.status.ok()) << version << ": " << p.status.message();
    EXPECT_EQ(p.file->version(), version);
    std::string_view arch;
    ASSERT_TRUE(p.file->GetString("general.architecture", &arch).ok());
    EXPECT_EQ(arch, "llama");
  }
}

TEST(GgufRoundTrip, EmptyFileWithNoKeysOrTensors) {
  auto bytes = GgufBuilder().Build();
  ASSERT_EQ(bytes.size(), 24u);
  Parsed p = Parse(bytes);
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_TRUE(p.file->metadata().empty());
  EXPECT_TRUE(p.file->tensors().empty());
  // Padding after the directory is fine too.
  Parsed padded = Parse(GgufBuilder().PadWithoutTensors(true).Kv("a", val::U8(1)).Build());
  ASSERT_TRUE(padded.status.ok()) << padded.status.message();
  EXPECT_EQ(padded.size, 64u);  // 24 + 14 bytes, padded to 32
}

TEST(GgufRoundTrip, ArraysOfEveryTypeIncludingNestedAndStrings) {
  GgufBuilder b;
  b.Kv("a_u8", val::ArrOf<uint8_t>(kU8, {0, 1, 255}))
      .Kv("a_i8", val::ArrOf<int8_t>(kI8, {-128, 0, 127}))
      .Kv("a_u16", val::ArrOf<uint16_t>(kU16, {1, 65535}))
      .Kv("a_i16", val::ArrOf<int16_t>(kI16, {-2, 3}))
      .Kv("a_u32", val::ArrOf<uint32_t>(kU32, {7, 4294967295u}))
      .Kv("a_i32", val::ArrOf<int32_t>(kI32, {1, -2, 3}))
      .Kv("a_f32", val::ArrOf<float>(kF32, {0.5f, -1.25f, 1048576.f}))
      .Kv("a_bool", val::ArrOf<uint8_t>(kBool, {1, 0, 1}))
      .Kv("a_u64", val::ArrOf<uint64_t>(kU64, {0, std::numeric_limits<uint64_t>::max()}))
      .Kv("a_i64", val::ArrOf<int64_t>(kI64, {-5, std::numeric_limits<int64_t>::max()}))
      .Kv("a_f64", val::ArrOf<double>(kF64, {0.25, -1e-300}))
      .Kv("a_str", val::StrArr({"a\"b", "c\n", "", "\xE2\x82\xAC"}))
      .Kv("a_empty", val::ArrOf<int32_t>(kI32, {}))
      .Kv("a_empty_str", val::StrArr({}))
      .Kv("a_nested", val::Arr(kArray, {val::ArrOf<int32_t>(kI32, {1, 2}), val::ArrOf<int32_t>(kI32, {3}),
                                        val::ArrOf<int32_t>(kI32, {})}))
      .Kv("a_nested_str", val::Arr(kArray, {val::StrArr({"x", "y"}), val::StrArr({"z"})}))
      .Kv("a_deep", val::Arr(kArray, {val::Arr(kArray, {val::ArrOf<uint8_t>(kU8, {9})})}))
      .Kv("tail", val::U8(42));  // parsing resumes correctly after the arrays
  Parsed p = Parse(b.Build());
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  const GgufFile& f = *p.file;
  auto str = [&](const char* key) {
    const Value* v = f.Find(key);
    EXPECT_NE(v, nullptr) << key;
    return v ? GgufFile::ValueToString(*v) : std::string();
  };
  EXPECT_EQ(str("a_u8"), "[0, 1, 255]");
  EXPECT_EQ(str("a_i8"), "[-128, 0, 127]");
  EXPECT_EQ(str("a_u16"), "[1, 65535]");
  EXPECT_EQ(str("a_i16"), "[-2, 3]");
  EXPECT_EQ(str("a_u32"), "[7, 4294967295]");
  EXPECT_EQ(str("a_i32"), "[1, -2, 3]");
  EXPECT_EQ(str("a_f32"), "[0.5, -1.25, 1048576]");
  EXPECT_EQ(str("a_bool"), "[true, false, true]");
  EXPECT_EQ(str("a_u64"), "[0, 18446744073709551615]");
  EXPECT_EQ(str("a_i64"), "[-5, 9223372036854775807]");
  EXPECT_EQ(str("a_f64"), "[0.25, -1e-300]");
  EXPECT_EQ(str("a_str"), "[\"a\\\"b\", \"c\\u000a\", \"\", \"\xE2\x82\xAC\"]");
  EXPECT_EQ(str("a_empty"), "[]");
  EXPECT_EQ(str("a_empty_str"), "[]");
  EXPECT_EQ(str("a_nested"), "[[1, 2], [3], []]");
  EXPECT_EQ(str("a_nested_str"), "[[\"x\", \"y\"], [\"z\"]]");
  EXPECT_EQ(str("a_deep"), "[[[9]]]");
  EXPECT_EQ(str("tail"), "42");

  const Value* a = f.Find("a_i32");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, ValueType::ARRAY);
  EXPECT_EQ(a->elem_type, ValueType::INT32);
  EXPECT_EQ(a->count, 3u);
  ASSERT_NE(a->raw, nullptr);
  int32_t second;
  std::memcpy(&second, a->raw + 4, 4);
  EXPECT_EQ(second, -2);

  const Value* n = f.Find("a_nested");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->elem_type, ValueType::ARRAY);
  ASSERT_EQ(n->nested.size(), 3u);
  EXPECT_EQ(n->nested[0].type, ValueType::ARRAY);
  EXPECT_EQ(n->nested[0].elem_type, ValueType::INT32);
  EXPECT_EQ(n->nested[0].count, 2u);
  EXPECT_EQ(n->nested[2].count, 0u);

  std::vector<std::string_view> strs;
  ASSERT_TRUE(f.GetStringArray("a_str", &strs).ok());
  ASSERT_EQ(strs.size(), 4u);
  EXPECT_EQ(strs[0], "a\"b");
  EXPECT_EQ(strs[1], "c\n");
  EXPECT_EQ(strs[2], "");
  EXPECT_EQ(strs[3], "\xE2\x82\xAC");
  ASSERT_TRUE(f.GetStringArray("a_empty_str", &strs).ok());
  EXPECT_TRUE(strs.empty());

  std::vector<float> fl;
  ASSERT_TRUE(f.GetF32Array("a_f32", &fl).ok());
  EXPECT_EQ(fl, (std::vector<float>{0.5f, -1.25f, 1048576.f}));
  ASSERT_TRUE(f.GetF32Array("a_i16", &fl).ok());  // integers convert
  EXPECT_EQ(fl, (std::vector<float>{-2.f, 3.f}));
  ASSERT_TRUE(f.GetF32Array("a_f64", &fl).ok());
  EXPECT_EQ(fl[0], 0.25f);
  ASSERT_TRUE(f.GetF32Array("a_empty", &fl).ok());
  EXPECT_TRUE(fl.empty());

  std::vector<int32_t> in;
  ASSERT_TRUE(f.GetI32Array("a_i32", &in).ok());
  EXPECT_EQ(in, (std::vector<int32_t>{1, -2, 3}));
  ASSERT_TRUE(f.GetI32Array("a_u8", &in).ok());
  EXPECT_EQ(in, (std::vector<int32_t>{0, 1, 255}));
  ASSERT_TRUE(f.GetI32Array("a_i8", &in).ok());
  EXPECT_EQ(in, (std::vector<int32_t>{-128, 0, 127}));

  // Out-of-range / wrong kinds.
  Status s = f.GetI32Array("a_u32", &in);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("element 1 is out of range"), std::string::npos) << s.message();
  s = f.GetI32Array("a_i64", &in);
  EXPECT_EQ(s.code(), Code::kFormat);
  s = f.GetI32Array("a_f32", &in);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("ARRAY of integers"), std::string::npos) << s.message();
  s = f.GetF32Array("a_str", &fl);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("ARRAY of numbers"), std::string::npos) << s.message();
  s = f.GetF32Array("a_nested", &fl);
  EXPECT_EQ(s.code(), Code::kFormat);
  s = f.GetStringArray("a_i32", &strs);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("ARRAY of STRING"), std::string::npos) << s.message();
  s = f.GetStringArray("tail", &strs);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_EQ(f.GetStringArray("nope", &strs).code(), Code::kNotFound);
  EXPECT_EQ(f.GetF32Array("nope", &fl).code(), Code::kNotFound);
  EXPECT_EQ(f.GetI32Array("nope", &in).code(), Code::kNotFound);
}

TEST(GgufRoundTrip, TypedScalarGetters) {
  GgufBuilder b;
  b.Kv("u8", val::U8(7))
      .Kv("u16", val::U16(65535))
      .Kv("u32max", val::U32(0xFFFFFFFFu))
      .Kv("u32big", val::U32(0x80000000u))
      .Kv("i32neg", val::I32(-3))
      .Kv("i32pos", val::I32(12))
      .Kv("i64min32", val::I64(std::numeric_limits<int32_t>::min()))
      .Kv("i64small", val::I64(int64_t(std::numeric_limits<int32_t>::min()) - 1))
      .Kv("u64big", val::U64(uint64_t(1) << 32))
      .Kv("u64ok", val::U64(123))
      .Kv("f32", val::F32(2.5f))
      .Kv("f64", val::F64(-0.125))
      .Kv("bool", val::Bool(true))
      .Kv("str", val::Str("text"));
  Parsed p = Parse(b.Build());
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  const GgufFile& f = *p.file;

  uint32_t u = 0;
  ASSERT_TRUE(f.GetU32("u8", &u).ok());
  EXPECT_EQ(u, 7u);
  ASSERT_TRUE(f.GetU32("u16", &u).ok());
  EXPECT_EQ(u, 65535u);
  ASSERT_TRUE(f.GetU32("u32max", &u).ok());
  EXPECT_EQ(u, 0xFFFFFFFFu);
  ASSERT_TRUE(f.GetU32("i32pos", &u).ok());
  EXPECT_EQ(u, 12u);
  ASSERT_TRUE(f.GetU32("u64ok", &u).ok());
  EXPECT_EQ(u, 123u);
  Status s = f.GetU32("i32neg", &u);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("out of range for UINT32"), std::string::npos) << s.message();
  EXPECT_EQ(f.GetU32("u64big", &u).code(), Code::kFormat);
  s = f.GetU32("f32", &u);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("is FLOAT32, expected an integer"), std::string::npos) << s.message();
  EXPECT_EQ(f.GetU32("str", &u).code(), Code::kFormat);
  s = f.GetU32("absent", &u);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("absent"), std::string::npos);

  int32_t i = 0;
  ASSERT_TRUE(f.GetI32("i32neg", &i).ok());
  EXPECT_EQ(i, -3);
  ASSERT_TRUE(f.GetI32("u8", &i).ok());
  EXPECT_EQ(i, 7);
  ASSERT_TRUE(f.GetI32("i64min32", &i).ok());
  EXPECT_EQ(i, std::numeric_limits<int32_t>::min());
  s = f.GetI32("u32big", &i);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("out of range for INT32"), std::string::npos) << s.message();
  EXPECT_EQ(f.GetI32("i64small", &i).code(), Code::kFormat);
  EXPECT_EQ(f.GetI32("u64big", &i).code(), Code::kFormat);
  EXPECT_EQ(f.GetI32("bool", &i).code(), Code::kFormat);
  EXPECT_EQ(f.GetI32("absent", &i).code(), Code::kNotFound);

  float x = 0;
  ASSERT_TRUE(f.GetF32("f32", &x).ok());
  EXPECT_EQ(x, 2.5f);
  ASSERT_TRUE(f.GetF32("f64", &x).ok());
  EXPECT_EQ(x, -0.125f);
  ASSERT_TRUE(f.GetF32("i32neg", &x).ok());
  EXPECT_EQ(x, -3.f);
  ASSERT_TRUE(f.GetF32("u32max", &x).ok());
  EXPECT_EQ(x, 4294967295.f);
  s = f.GetF32("str", &x);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("expected a number"), std::string::npos) << s.message();
  EXPECT_EQ(f.GetF32("bool", &x).code(), Code::kFormat);
  EXPECT_EQ(f.GetF32("absent", &x).code(), Code::kNotFound);

  bool bo = false;
  ASSERT_TRUE(f.GetBool("bool", &bo).ok());
  EXPECT_TRUE(bo);
  s = f.GetBool("u8", &bo);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("expected BOOL"), std::string::npos) << s.message();
  EXPECT_EQ(f.GetBool("absent", &bo).code(), Code::kNotFound);

  std::string_view sv;
  ASSERT_TRUE(f.GetString("str", &sv).ok());
  EXPECT_EQ(sv, "text");
  s = f.GetString("u8", &sv);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("'u8' is UINT8, expected STRING"), std::string::npos) << s.message();
  EXPECT_EQ(f.GetString("absent", &sv).code(), Code::kNotFound);
}

TEST(GgufRoundTrip, ValueToStringScalars) {
  GgufBuilder b;
  b.Kv("u8", val::U8(200))
      .Kv("i8", val::I8(-5))
      .Kv("i16", val::I16(-300))
      .Kv("u32", val::U32(4000000000u))
      .Kv("i64", val::I64(std::numeric_limits<int64_t>::min()))
      .Kv("u64", val::U64(std::numeric_limits<uint64_t>::max()))
      .Kv("f32", val::F32(0.1f))
      .Kv("f32half", val::F32(0.5f))
      .Kv("f64", val::F64(1e300))
      .Kv("f64int", val::F64(3.0))
      .Kv("t", val::Bool(true))
      .Kv("f", val::Bool(false))
      .Kv("s", val::Str("quote \" kept\nverbatim"));
  Parsed p = Parse(b.Build());
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  auto str = [&](const char* key) { return GgufFile::ValueToString(*p.file->Find(key)); };
  EXPECT_EQ(str("u8"), "200");
  EXPECT_EQ(str("i8"), "-5");
  EXPECT_EQ(str("i16"), "-300");
  EXPECT_EQ(str("u32"), "4000000000");
  EXPECT_EQ(str("i64"), "-9223372036854775808");
  EXPECT_EQ(str("u64"), "18446744073709551615");
  EXPECT_EQ(str("f32"), "0.100000001");  // %.9g of the float
  EXPECT_EQ(str("f32half"), "0.5");
  EXPECT_EQ(str("f64"), "1e+300");
  EXPECT_EQ(str("f64int"), "3");
  EXPECT_EQ(str("t"), "true");
  EXPECT_EQ(str("f"), "false");
  EXPECT_EQ(str("s"), "quote \" kept\nverbatim");  // top-level strings are not quoted
  EXPECT_STREQ(ValueTypeName(ValueType::FLOAT64), "FLOAT64");
  EXPECT_STREQ(ValueTypeName(ValueType::ARRAY), "ARRAY");
  EXPECT_STREQ(ValueTypeName(static_cast<ValueType>(99)), "?");
}

TEST(GgufRoundTrip, TensorsOfSeveralTypes) {
  std::vector<uint8_t> f32data(4 * 6);
  for (size_t k = 0; k < f32data.size(); ++k) f32data[k] = uint8_t(100 + k);
  TensorSpec first;
  first.name = "tok_embd.weight";
  first.type = kTF32;
  first.ne = {3, 2};
  first.data = f32data;
  GgufBuilder b;
  b.Kv("general.architecture", val::Str("llama"))
      .Tensor(first)
      .Tensor("f16", kTF16, {5})                 // 10 bytes: next offset must realign
      .Tensor("q8", kTQ8_0, {64, 3})             // 2 blocks * 34 * 3 rows = 204
      .Tensor("q4", kTQ4_0, {32, 1, 2})          // 1 block * 18 * 2 = 36
      .Tensor("q4k", kTQ4_K, {256, 2, 1, 1})     // 288
      .Tensor("q6k", kTQ6_K, {512})              // 420
      .Tensor("bf16", kTBF16, {7, 1, 1, 3})      // 42
      .Tensor("i8", kTI8, {3});                  // 3: last, file ends right after it
  Layout lay;
  auto bytes = b.Build(&lay);
  Parsed p = Parse(bytes);
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  const GgufFile& f = *p.file;
  ASSERT_EQ(f.tensors().size(), 8u);
  EXPECT_EQ(lay.data_start % 32, 0u);
  EXPECT_EQ(bytes.size(), lay.data_start + lay.tensors.back().rel_offset + 3);

  const TensorInfo* t = f.FindTensor("tok_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, &f.tensors()[0]);
  EXPECT_EQ(t->type, GgmlType::F32);
  EXPECT_EQ(t->n_dims, 2u);
  EXPECT_EQ(t->ne[0], 3);
  EXPECT_EQ(t->ne[1], 2);
  EXPECT_EQ(t->ne[2], 1);
  EXPECT_EQ(t->ne[3], 1);
  EXPECT_EQ(t->n_elements(), 6);
  EXPECT_EQ(t->offset, 0u);
  EXPECT_EQ(t->nbytes, 24u);
  EXPECT_EQ(t->data, p.buf.get() + lay.data_start);
  EXPECT_EQ(std::memcmp(t->data, f32data.data(), 24), 0);

  struct Want { const char* name; GgmlType type; uint32_t n_dims; int64_t n; uint64_t nbytes; };
  const Want wants[] = {
      {"f16", GgmlType::F16, 1, 5, 10},        {"q8", GgmlType::Q8_0, 2, 192, 204},
      {"q4", GgmlType::Q4_0, 3, 64, 36},       {"q4k", GgmlType::Q4_K, 4, 512, 288},
      {"q6k", GgmlType::Q6_K, 1, 512, 420},    {"bf16", GgmlType::BF16, 4, 21, 42},
      {"i8", GgmlType::I8, 1, 3, 3},
  };
  for (size_t k = 0; k < std::size(wants); ++k) {
    const Want& w = wants[k];
    SCOPED_TRACE(w.name);
    const TensorInfo* ti = f.FindTensor(w.name);
    ASSERT_NE(ti, nullptr);
    EXPECT_EQ(ti, &f.tensors()[k + 1]);
    EXPECT_EQ(ti->name, w.name);
    EXPECT_EQ(ti->type, w.type);
    EXPECT_EQ(ti->n_dims, w.n_dims);
    EXPECT_EQ(ti->n_elements(), w.n);
    EXPECT_EQ(ti->nbytes, w.nbytes);
    EXPECT_EQ(ti->offset, lay.tensors[k + 1].rel_offset);
    EXPECT_EQ(ti->offset % 32, 0u);
    EXPECT_EQ(ti->data, p.buf.get() + lay.data_start + ti->offset);
    // Builder pattern: byte j of tensor i is i*31 + j*7 + 1.
    const size_t i = k + 1;
    EXPECT_EQ(ti->data[0], uint8_t(i * 31 + 1));
    EXPECT_EQ(ti->data[ti->nbytes - 1], uint8_t(i * 31 + (ti->nbytes - 1) * 7 + 1));
  }
  EXPECT_EQ(f.FindTensor("missing"), nullptr);
  EXPECT_EQ(f.FindTensor("tok_embd"), nullptr);
}

TEST(GgufRoundTrip, CustomAlignment) {
  for (uint32_t a : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(a);
    GgufBuilder b;
    b.Alignment(a).Tensor("a", kTF16, {3}).Tensor("b", kTQ8_0, {32}).Tensor("c", kTF32, {1});
    Layout lay;
    auto bytes = b.Build(&lay);
    Parsed p = Parse(bytes);
    ASSERT_TRUE(p.status.ok()) << p.status.message();
    EXPECT_EQ(p.file->alignment(), a);
    EXPECT_EQ(lay.data_start % a, 0u);
    for (size_t k = 0; k < 3; ++k) {
      const TensorInfo& t = p.file->tensors()[k];
      EXPECT_EQ(t.offset % a, 0u);
      EXPECT_EQ(t.data, p.buf.get() + lay.data_start + lay.tensors[k].rel_offset);
    }
    if (a == 1) {
      EXPECT_EQ(p.file->tensors()[1].offset, 6u);  // packed
    }
  }
}

TEST(GgufRoundTrip, ZeroSizedDimensionIsAccepted) {
  // A zero dimension is not malformed (ggml allows it): zero elements, zero bytes.
  auto bytes = Minimal().Tensor("empty", kTF32, {0, 4}).Tensor("w", kTF32, {2}).Build();
  Parsed p = Parse(bytes);
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  const TensorInfo* t = p.file->FindTensor("empty");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_elements(), 0);
  EXPECT_EQ(t->nbytes, 0u);
}

TEST(GgufRoundTrip, TrailingBytesAfterDataAreIgnored) {
  auto bytes = Minimal().Tensor("w", kTF32, {2}).Trailer({1, 2, 3, 4, 5}).Build();
  Parsed p = Parse(bytes);
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.file->FindTensor("w")->nbytes, 8u);
}

// ======================================================================== malformed

TEST(GgufMalformed, EmptyBuffer) {
  std::unique_ptr<GgufFile> out;
  Status s = GgufFile::FromMemory(nullptr, 0, &out);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("truncated header"), std::string::npos) << s.message();
  EXPECT_TRUE(out == nullptr);
  EXPECT_FORMAT_ERROR(std::vector<uint8_t>{}, "truncated header");
}

TEST(GgufMalformed, TruncatedHeader) {
  auto full = GgufBuilder().Build();
  for (size_t n : {1u, 3u, 4u, 8u, 16u, 23u}) {
    SCOPED_TRACE(n);
    std::vector<uint8_t> prefix(full.begin(), full.begin() + n);
    EXPECT_FORMAT_ERROR(prefix, "truncated header");
    EXPECT_FORMAT_ERROR(prefix, std::to_string(n) + " bytes");
  }
}

TEST(GgufMalformed, BadMagic) {
  EXPECT_FORMAT_ERROR(GgufBuilder().Magic("GGML").Build(), "bad magic 'GGML'");
  EXPECT_FORMAT_ERROR(GgufBuilder().Magic("FUGG").Build(), "not a GGUF file");
  // Short file with a wrong magic: still named as a bad magic.
  EXPECT_FORMAT_ERROR((std::vector<uint8_t>{'P', 'K', 3, 4, 0, 0}), "bad magic");
  // Non-printable bytes do not end up raw in the message.
  Parsed p = Parse(GgufBuilder().Magic(std::string("\x01\x02\xff\x00", 4)).Build());
  EXPECT_EQ(p.status.code(), Code::kFormat);
  EXPECT_NE(p.status.message().find("bad magic '" + std::string(4, '?') + "'"), std::string::npos) << p.status.message();
}

TEST(GgufMalformed, UnsupportedVersions) {
  EXPECT_FORMAT_ERROR(GgufBuilder(1).Build(), "unsupported GGUF version 1");
  EXPECT_FORMAT_ERROR(GgufBuilder(4).Build(), "unsupported GGUF version 4");
  EXPECT_FORMAT_ERROR(GgufBuilder(0).Build(), "unsupported GGUF version 0");
  EXPECT_FORMAT_ERROR(GgufBuilder(0xFFFFFFFFu).Build(), "unsupported GGUF version");
  // A big-endian v3 file reads as version 0x03000000.
  EXPECT_FORMAT_ERROR(GgufBuilder(0x03000000u).Build(), "byte-swapped");
}

TEST(GgufMalformed, AbsurdCounts) {
  const uint64_t huge = uint64_t(1) << 60;
  EXPECT_FORMAT_ERROR(Minimal().KvCount(huge).Build(), "metadata count " + std::to_string(huge));
  EXPECT_FORMAT_ERROR(Minimal().KvCount(huge).Build(), "cannot fit");
  EXPECT_FORMAT_ERROR(Minimal().KvCount(~uint64_t(0)).Build(), "metadata count");
  EXPECT_FORMAT_ERROR(Minimal().TensorCount(huge).Build(), "tensor count " + std::to_string(huge));
  EXPECT_FORMAT_ERROR(Minimal().TensorCount(~uint64_t(0)).Build(), "tensor count");
  // Counts that pass the up-front bound but exceed what is really there.
  EXPECT_FORMAT_ERROR(Minimal().Kv("x", val::U32(1)).KvCount(3).Build(), "truncated file: metadata key #2");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {64}).TensorCount(2).Build(), "tensor ");
}

TEST(GgufMalformed, StringLengthPastEnd) {
  Layout lay;
  auto bytes = Minimal().Kv("b", val::Str("value")).Build(&lay);
  // Key length.
  auto k = bytes;
  Poke<uint64_t>(&k, lay.kvs[1].key, 1000);
  EXPECT_FORMAT_ERROR(k, "exceeds the remaining");
  EXPECT_FORMAT_ERROR(k, "metadata key #1");
  Poke<uint64_t>(&k, lay.kvs[1].key, ~uint64_t(0));
  EXPECT_FORMAT_ERROR(k, "string length 18446744073709551615");
  // Value length.
  auto v = bytes;
  Poke<uint64_t>(&v, lay.kvs[1].value, 6);  // one past the end
  EXPECT_FORMAT_ERROR(v, "exceeds the remaining 5 bytes");
  EXPECT_FORMAT_ERROR(v, "'b'");
  // String array element.
  auto a = Minimal().Kv("arr", val::StrArr({"one", "two"})).Build(&lay);
  Poke<uint64_t>(&a, lay.kvs[1].value + 12 + 8 + 3, uint64_t(1) << 40);
  EXPECT_FORMAT_ERROR(a, "element 1");
  // Tensor name.
  auto t = Minimal().Tensor("w", kTF32, {4}).Build(&lay);
  Poke<uint64_t>(&t, lay.tensors[0].name, 1u << 20);
  EXPECT_FORMAT_ERROR(t, "tensor #0 name");
}

TEST(GgufMalformed, InvalidUtf8AndEmptyKeys) {
  EXPECT_FORMAT_ERROR(Minimal().Kv("ok", val::U8(1)).Kv("bad\xC3(", val::U8(1)).Build(),
                      "metadata key #2: invalid UTF-8 in key at byte 3");
  EXPECT_FORMAT_ERROR(Minimal().Kv("\xC0\xAF", val::U8(1)).Build(), "invalid UTF-8 in key");  // overlong
  EXPECT_FORMAT_ERROR(Minimal().Kv("\xED\xA0\x80", val::U8(1)).Build(), "invalid UTF-8");     // surrogate
  EXPECT_FORMAT_ERROR(Minimal().Kv("", val::U8(1)).Build(), "empty key");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w\xFF", kTF32, {4}).Build(), "invalid UTF-8 in name");
}

TEST(GgufMalformed, DuplicateKeyAndTensorName) {
  EXPECT_FORMAT_ERROR(Minimal().Kv("a", val::U8(1)).Kv("a", val::U32(2)).Build(), "'a'): duplicate key");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {4}).Tensor("v", kTF32, {4}).Tensor("w", kTF16, {8}).Build(),
                      "tensor 'w': duplicate tensor name");
}

TEST(GgufMalformed, UnknownValueTypes) {
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("k", 13, {0, 0, 0, 0}).Build(), "unknown value type 13");
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("k", 13, {0, 0, 0, 0}).Build(), "'k'");
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("k", 0xFFFFFFFFu, {0, 0, 0, 0}).Build(), "unknown value type 4294967295");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(13, 0)).Build(), "unknown array element type 13");
  // Nested element of unknown type.
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::Arr(kArray, {val::RawArr(99, 0)})).Build(),
                      "unknown array element type 99");
  // BOOL must be 0 or 1.
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("b", kBool, {2}).Build(), "boolean value 2 is not 0 or 1");
  EXPECT_FORMAT_ERROR(Minimal().Kv("b", val::RawArr(kBool, 3, {1, 0, 7})).Build(), "boolean element 2");
}

TEST(GgufMalformed, ValueTruncatedAtEndOfFile) {
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("k", kU64, {1, 2, 3}).Build(), "truncated file");
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("k", kF64, {}).Build(), "needs 8 bytes");
  EXPECT_FORMAT_ERROR(Minimal().KvRaw("k", kArray, {0, 0}).Build(), "element type");
}

TEST(GgufMalformed, UnknownGgmlType) {
  for (uint32_t type : {4u, 5u, 31u, 32u, 33u, 36u, 40u, 1000u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(type);
    TensorSpec t;
    t.name = "w";
    t.type = type;
    t.ne = {32};
    t.nbytes = 128;
    EXPECT_FORMAT_ERROR(Minimal().Tensor(t).Build(), "tensor 'w': unknown tensor type id " + std::to_string(type));
  }
}

TEST(GgufMalformed, NDimsOutOfRange) {
  for (uint32_t nd : {0u, 5u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(nd);
    TensorSpec t;
    t.name = "w";
    t.ne = {4};
    t.n_dims = nd;
    EXPECT_FORMAT_ERROR(Minimal().Tensor(t).Build(), "n_dims " + std::to_string(nd) + " is outside 1..4");
  }
}

TEST(GgufMalformed, BadDimensions) {
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {-1}).Build(), "negative dimension -1");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {4, 2, -3}).Build(), "negative dimension");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {std::numeric_limits<int64_t>::min()}).Build(),
                      "negative dimension");
  const int64_t big = int64_t(1) << 32;
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {big, big}).Build(), "element count overflows");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {std::numeric_limits<int64_t>::max(), 2}).Build(),
                      "element count overflows");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {65536, 65536, 65536, 65536}).Build(), "element count overflows");
  // Products that fit but are absurd for the file are caught by the size check.
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {int64_t(1) << 40}).Build(), "exceeds the data section");
  // Row length must be whole blocks.
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTQ8_0, {33}).Build(), "row length 33 is not a multiple of the Q8_0 block size 32");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTQ4_K, {128}).Build(), "Q4_K block size 256");
}

// The byte size (elements / block * block bytes) must not wrap around 2^64. With ne[0] = 2^62
// F32 elements the size is 2^64 bytes, which wraps to 0, so the tensor is accepted with
// nbytes = 0 although it claims 2^62 elements (likewise F64 with ne[0] = 2^61 + 1 gives
// nbytes = 8). Disabled until src/gguf/gguf.cpp bounds the byte size; see the report.
TEST(GgufMalformed, TensorByteSizeMustNotWrap) {
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTF32, {int64_t(1) << 62}).Build(), "tensor 'w'");
  EXPECT_FORMAT_ERROR(Minimal().Tensor("w", kTI32, {int64_t(1) << 62}).Build(), "tensor 'w'");
  TensorSpec t;
  t.name = "w";
  t.type = kTF64;
  t.ne = {(int64_t(1) << 61) + 1};
  t.nbytes = 8;
  EXPECT_FORMAT_ERROR(Minimal().Tensor(t).Build(), "tensor 'w'");
}

TEST(GgufMalformed, TensorOffsetOutOfRange) {
  auto make = [](uint64_t offset) {
    TensorSpec t;
    t.name = "w";
    t.ne = {8};  // 32 bytes
    t.offset = offset;
    return Minimal().Tensor("first", kTF32, {8}).Tensor(t).Build();
  };
  EXPECT_FORMAT_ERROR(make(64), "tensor 'w': data offset 64 + size 32 exceeds the data section of 64 bytes");
  EXPECT_FORMAT_ERROR(make(32 + 32), "exceeds the data section");
  // offset + size wraps around 2^64.
  EXPECT_FORMAT_ERROR(make(~uint64_t(0) - 31), "exceeds the data section");
  EXPECT_FORMAT_ERROR(make(uint64_t(1) << 63), "exceeds the data section");
  // Data missing entirely (only the directory, padded).
  Layout lay;
  auto bytes = Minimal().Tensor("w", kTF32, {8}).Build(&lay);
  bytes.resize(lay.data_start + 31);
  EXPECT_FORMAT_ERROR(bytes, "exceeds the data section of 31 bytes");
  // Directory ends mid-padding: the data section would start past the end.
  bytes.resize(lay.dir_end + 1);
  ASSERT_GT(lay.data_start, lay.dir_end + 1);
  EXPECT_FORMAT_ERROR(bytes, "data section would start");
  // In range, overlapping the previous tensor: allowed (the format does not forbid aliasing).
  Parsed p = Parse(make(0));
  EXPECT_TRUE(p.status.ok()) << p.status.message();
}

TEST(GgufMalformed, MisalignedTensorOffset) {
  TensorSpec t;
  t.name = "w";
  t.ne = {8};
  t.offset = 4;
  EXPECT_FORMAT_ERROR(Minimal().Tensor(t).Build(), "tensor 'w': data offset 4 is not a multiple of the alignment 32");
  t.offset = 16;
  EXPECT_FORMAT_ERROR(GgufBuilder().Alignment(64).Tensor(t).Build(), "not a multiple of the alignment 64");
}

TEST(GgufMalformed, BadGeneralAlignment) {
  for (uint32_t a : {0u, 3u, 48u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(a);
    EXPECT_FORMAT_ERROR(Minimal().Alignment(a).Build(),
                        "general.alignment " + std::to_string(a) + " is not a nonzero power of two");
  }
  EXPECT_FORMAT_ERROR(Minimal().Kv("general.alignment", val::U64(32)).Build(), "general.alignment must be UINT32, found UINT64");
  EXPECT_FORMAT_ERROR(Minimal().Kv("general.alignment", val::Str("32")).Build(), "found STRING");
  // The largest power of two is fine.
  Parsed p = Parse(Minimal().Alignment(0x80000000u).Build());
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.file->alignment(), 0x80000000u);
}

TEST(GgufMalformed, NestedArrayDepthBomb) {
  // Depth 8 is the limit; deeper is rejected without recursing further.
  Parsed ok = Parse(Minimal().Kv("k", val::Nested(8)).Build());
  EXPECT_TRUE(ok.status.ok()) << ok.status.message();
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::Nested(9)).Build(), "arrays nested deeper than 8");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::Nested(200)).Build(), "nested deeper");
  // A hand-made bomb: 100000 levels of "array of 1 array" headers (1.2 MB), truncated.
  Bytes bomb;
  for (int d = 0; d < 100000; ++d) bomb.U32(kArray).U64(1);
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", Val{kArray, bomb.b}).Build(), "nested deeper");
}

TEST(GgufMalformed, ArrayCountOverflow) {
  // count * element size wraps around 2^64 (2^61 * 8 = 0, 2^62 + 1 elements of 4 bytes = 4).
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kU64, uint64_t(1) << 61)).Build(),
                      "array of 2305843009213693952 elements of 8 bytes exceeds the remaining");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kU32, (uint64_t(1) << 62) + 1, {0, 0, 0, 0})).Build(),
                      "exceeds the remaining");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kU8, ~uint64_t(0))).Build(), "exceeds the remaining");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kI16, 3, {1, 0, 2, 0, 3})).Build(), "exceeds the remaining 5 bytes");
  // Strings / nested arrays: huge counts are rejected before any allocation.
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kString, ~uint64_t(0))).Build(), "array count");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kString, uint64_t(1) << 60)).Build(), "cannot fit in the remaining");
  EXPECT_FORMAT_ERROR(Minimal().Kv("k", val::RawArr(kArray, uint64_t(1) << 60)).Build(), "cannot fit in the remaining");
}

// ======================================================================== truncation

// Small files whose every proper prefix is invalid, except prefixes that end exactly after a
// complete directory of a tensor-less file.
std::vector<std::vector<uint8_t>> TruncationSeeds(std::vector<size_t>* valid_prefix_len) {
  std::vector<std::vector<uint8_t>> out;
  GgufBuilder a;
  a.Kv("general.architecture", val::Str("llama"))
      .Kv("llama.block_count", val::U32(2))
      .Kv("f", val::F32(1.5f))
      .Kv("tokens", val::StrArr({"<s>", "</s>", "hi"}))
      .Kv("nested", val::Arr(kArray, {val::ArrOf<int16_t>(kI16, {1, 2}), val::ArrOf<int16_t>(kI16, {})}))
      .Tensor("a", kTF32, {4, 2})
      .Tensor("b", kTQ8_0, {32, 2})
      .Tensor("c", kTF16, {3});
  out.push_back(a.Build());
  valid_prefix_len->push_back(0);  // none
  GgufBuilder b(2);
  b.Alignment(16).Kv("x", val::U64(7)).Kv("s", val::Str("abc"));
  Layout lay;
  out.push_back(b.Build(&lay));
  valid_prefix_len->push_back(0);  // no tensors and no padding: only the full file
  GgufBuilder c;
  c.Kv("k", val::Bool(true)).PadWithoutTensors(true);
  out.push_back(c.Build(&lay));
  valid_prefix_len->push_back(lay.dir_end);  // padding is optional without tensors
  return out;
}

TEST(GgufTruncation, EveryPrefixFailsCleanly) {
  std::vector<size_t> valid_from;
  const auto seeds = TruncationSeeds(&valid_from);
  for (size_t s = 0; s < seeds.size(); ++s) {
    const auto& bytes = seeds[s];
    SCOPED_TRACE("seed " + std::to_string(s) + " (" + std::to_string(bytes.size()) + " bytes)");
    Parsed full = Parse(bytes);
    ASSERT_TRUE(full.status.ok()) << full.status.message();
    for (size_t n = 0; n < bytes.size(); ++n) {
      Parsed p = Parse(bytes, n);
      const bool expect_ok = valid_from[s] != 0 && n >= valid_from[s];
      if (expect_ok) {
        EXPECT_TRUE(p.status.ok()) << "prefix " << n << ": " << p.status.message();
      } else {
        EXPECT_EQ(p.status.code(), Code::kFormat) << "prefix " << n << ": " << p.status.message();
        EXPECT_FALSE(p.status.message().empty()) << "prefix " << n;
        EXPECT_TRUE(p.file == nullptr) << "prefix " << n;
      }
    }
  }
}

// ======================================================================== Open

class GgufOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zf_gguf_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = dir_ + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    if (f) {
      if (!bytes.empty()) {
        EXPECT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
      }
      std::fclose(f);
    }
    files_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(GgufOpenTest, MappedAndReadAgree) {
  Layout lay;
  auto bytes = Minimal().Kv("n", val::I32(-9)).Tensor("w", kTQ8_0, {64}).Tensor("v", kTF32, {5}).Build(&lay);
  const std::string path = Write("model.gguf", bytes);
  for (bool no_mmap : {false, true}) {
    SCOPED_TRACE(no_mmap);
    OpenOptions opt;
    opt.no_mmap = no_mmap;
    std::unique_ptr<GgufFile> f;
    Status s = GgufFile::Open(path, opt, &f);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->file_size(), bytes.size());
    int32_t n = 0;
    ASSERT_TRUE(f->GetI32("n", &n).ok());
    EXPECT_EQ(n, -9);
    const TensorInfo* v = f->FindTensor("v");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->nbytes, 20u);
    EXPECT_EQ(std::memcmp(v->data, bytes.data() + lay.data_start + v->offset, 20), 0);
  }
}

TEST_F(GgufOpenTest, MissingPathIsIoErrorNamingThePath) {
  const std::string path = dir_ + "/does_not_exist.gguf";
  std::unique_ptr<GgufFile> f;
  Status s = GgufFile::Open(path, OpenOptions(), &f);
  EXPECT_EQ(s.code(), Code::kIo);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_TRUE(f == nullptr);
}

TEST_F(GgufOpenTest, DirectoryFailsCleanly) {
  for (bool no_mmap : {false, true}) {
    OpenOptions opt;
    opt.no_mmap = no_mmap;
    std::unique_ptr<GgufFile> f;
    Status s = GgufFile::Open(dir_, opt, &f);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Code::kIo) << s.message();
    EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(dir_), std::string::npos) << s.message();
    EXPECT_TRUE(f == nullptr);
  }
}

TEST_F(GgufOpenTest, EmptyAndMalformedFilesAreFormatErrorsNamingThePath) {
  const std::string empty = Write("empty.gguf", {});
  std::unique_ptr<GgufFile> f;
  Status s = GgufFile::Open(empty, OpenOptions(), &f);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("is empty"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(empty), std::string::npos) << s.message();

  const std::string bad = Write("bad.gguf", GgufBuilder(4).Build());
  for (bool no_mmap : {false, true}) {
    OpenOptions opt;
    opt.no_mmap = no_mmap;
    s = GgufFile::Open(bad, opt, &f);
    EXPECT_EQ(s.code(), Code::kFormat);
    EXPECT_EQ(s.message().rfind("'" + bad + "': ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("unsupported GGUF version 4"), std::string::npos) << s.message();
    EXPECT_TRUE(f == nullptr);
  }
}

// A split model as llama-gguf-split writes it: the metadata in the first part, split.no (u16),
// split.count (u16) and split.tensors.count (i32) in every part, tensors spread over the parts.
std::vector<uint8_t> SplitPart(uint16_t no, uint16_t count, int32_t n_tensors, const std::vector<std::string>& tensors,
                               bool with_meta = false) {
  GgufBuilder b;
  if (with_meta) b.Kv("general.architecture", val::Str("llama")).Kv("answer", val::I32(42));
  b.Kv("split.no", val::U16(no)).Kv("split.count", val::U16(count)).Kv("split.tensors.count", val::I32(n_tensors));
  for (const std::string& t : tensors) b.Tensor(t, kTF32, {4});
  return b.Build();
}

TEST_F(GgufOpenTest, SplitModelOpensAsOneFile) {
  const auto p1 = SplitPart(0, 3, 5, {"a", "b"}, true), p2 = SplitPart(1, 3, 5, {"c"}), p3 = SplitPart(2, 3, 5, {"d", "e"});
  const std::string first = Write("m-00001-of-00003.gguf", p1);
  Write("m-00002-of-00003.gguf", p2);
  Write("m-00003-of-00003.gguf", p3);
  for (bool no_mmap : {false, true}) {
    OpenOptions opt;
    opt.no_mmap = no_mmap;
    std::unique_ptr<GgufFile> f;
    Status s = GgufFile::Open(first, opt, &f);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(f->n_parts(), 3);
    EXPECT_EQ(f->file_size(), p1.size() + p2.size() + p3.size());
    ASSERT_EQ(f->tensors().size(), 5u);
    int32_t answer = 0;
    EXPECT_TRUE(f->GetI32("answer", &answer).ok());
    EXPECT_EQ(answer, 42);
    for (const char* name : {"a", "b", "c", "d", "e"}) {
      const TensorInfo* t = f->FindTensor(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_EQ(t->nbytes, 16u);
    }
    // The later parts' tensors point into their own mappings: the data of "d" is part 3's.
    const TensorInfo* d = f->FindTensor("d");
    std::unique_ptr<GgufFile> alone;
    ASSERT_TRUE(GgufFile::FromMemory(p3.data(), p3.size(), &alone).ok());
    EXPECT_EQ(std::memcmp(d->data, alone->FindTensor("d")->data, 16), 0);
  }
}

TEST_F(GgufOpenTest, SplitModelErrorsNameTheProblem) {
  struct Case {
    const char* what;
    std::vector<std::pair<std::string, std::vector<uint8_t>>> files;
    const char* open;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"a later part given", {{"m-00001-of-00002.gguf", SplitPart(0, 2, 2, {"a"}, true)}, {"m-00002-of-00002.gguf", SplitPart(1, 2, 2, {"b"})}},
       "m-00002-of-00002.gguf", "is part 2 of 2 of a split model: load the first part (the file ending in -00001-of-00002.gguf)"},
      {"a part missing", {{"m-00001-of-00003.gguf", SplitPart(0, 3, 3, {"a"}, true)}, {"m-00002-of-00003.gguf", SplitPart(1, 3, 3, {"b"})}},
       "m-00001-of-00003.gguf", "split model part 3 of 3: cannot open"},
      {"renamed first part", {{"renamed.gguf", SplitPart(0, 2, 2, {"a"}, true)}}, "renamed.gguf", "its name does not end in -00001-of-00002.gguf"},
      {"a part of another split", {{"m-00001-of-00002.gguf", SplitPart(0, 2, 2, {"a"}, true)}, {"m-00002-of-00002.gguf", SplitPart(1, 3, 2, {"b"})}},
       "m-00001-of-00002.gguf", "says it is part 2 of 3, expected part 2 of 2"},
      {"a tensor twice", {{"m-00001-of-00002.gguf", SplitPart(0, 2, 2, {"a"}, true)}, {"m-00002-of-00002.gguf", SplitPart(1, 2, 2, {"a"})}},
       "m-00001-of-00002.gguf", "tensor 'a' appears in more than one part"},
      {"tensor count", {{"m-00001-of-00002.gguf", SplitPart(0, 2, 5, {"a"}, true)}, {"m-00002-of-00002.gguf", SplitPart(1, 2, 5, {"b"})}},
       "m-00001-of-00002.gguf", "split.tensors.count is 5 but the 2 parts hold 2 tensors"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    for (const auto& [name, bytes] : c.files) Write(name, bytes);
    std::unique_ptr<GgufFile> f;
    Status s = GgufFile::Open(dir_ + "/" + c.open, OpenOptions(), &f);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s.message();
    EXPECT_TRUE(f == nullptr);
    for (const auto& [name, bytes] : c.files) std::remove((dir_ + "/" + name).c_str());
  }
}

}  // namespace
}  // namespace zf::gguf
