// A tiny in-memory GGUF writer for tests (gguf_test.cpp, gguf_fuzz_test.cpp).
//
// GgufBuilder produces valid GGUF v2/v3 bytes: metadata of every value type (nested arrays and
// string arrays included), tensors of any ggml type with the right byte size, padding to the
// alignment (default 32, or general.alignment when set). Every header field can be overridden to
// write deliberately malformed files, and Build() reports where each field landed so tests can
// corrupt a specific byte. Values are encoded independently of the reader under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace zf::gguf::testutil {

// Value type ids of the format (kept separate from gguf.h on purpose).
enum : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// Ggml tensor type ids used by the tests.
enum : uint32_t {
  kTF32 = 0, kTF16 = 1, kTQ4_0 = 2, kTQ4_1 = 3, kTQ5_0 = 6, kTQ5_1 = 7, kTQ8_0 = 8, kTQ4_K = 12,
  kTQ5_K = 13, kTQ6_K = 14, kTIQ4_NL = 20, kTIQ4_XS = 23, kTI8 = 24,
  kTI32 = 26, kTF64 = 28, kTBF16 = 30, kTMXFP4 = 39,
};

// Block size (elements) and block bytes of the types above; {0, 0} when unknown to the builder.
inline void TypeLayout(uint32_t type, int64_t* block, uint64_t* bytes) {
  switch (type) {
    case kTF32: *block = 1; *bytes = 4; return;
    case kTF16: *block = 1; *bytes = 2; return;
    case kTQ4_0: *block = 32; *bytes = 18; return;
    case kTQ4_1: *block = 32; *bytes = 20; return;
    case kTQ5_0: *block = 32; *bytes = 22; return;
    case kTQ5_1: *block = 32; *bytes = 24; return;
    case kTQ5_K: *block = 256; *bytes = 176; return;
    case kTQ8_0: *block = 32; *bytes = 34; return;
    case kTQ4_K: *block = 256; *bytes = 144; return;
    case kTQ6_K: *block = 256; *bytes = 210; return;
    case kTIQ4_NL: *block = 32; *bytes = 18; return;
    case kTIQ4_XS: *block = 256; *bytes = 136; return;
    case kTMXFP4: *block = 32; *bytes = 17; return;
    case kTI8: *block = 1; *bytes = 1; return;
    case kTI32: *block = 1; *bytes = 4; return;
    case kTF64: *block = 1; *bytes = 8; return;
    case kTBF16: *block = 1; *bytes = 2; return;
    default: *block = 0; *bytes = 0; return;
  }
}

// ---- little-endian byte appenders ----
struct Bytes {
  std::vector<uint8_t> b;

  size_t size() const { return b.size(); }
  Bytes& U8(uint8_t v) { b.push_back(v); return *this; }
  Bytes& U16(uint16_t v) { return Raw(&v, 2); }
  Bytes& U32(uint32_t v) { return Raw(&v, 4); }
  Bytes& U64(uint64_t v) { return Raw(&v, 8); }
  Bytes& I64(int64_t v) { return Raw(&v, 8); }
  Bytes& F32(float v) { return Raw(&v, 4); }
  Bytes& F64(double v) { return Raw(&v, 8); }
  Bytes& Str(const std::string& s) { U64(s.size()); return Raw(s.data(), s.size()); }
  Bytes& Raw(const void* p, size_t n) {
    const uint8_t* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  Bytes& Append(const std::vector<uint8_t>& v) { b.insert(b.end(), v.begin(), v.end()); return *this; }
  Bytes& Pad(size_t alignment, uint8_t fill = 0) {
    while (alignment && b.size() % alignment) b.push_back(fill);
    return *this;
  }
};

// Overwrites a little-endian integer inside a buffer.
template <typename T>
inline void Poke(std::vector<uint8_t>* buf, size_t pos, T v) {
  std::memcpy(buf->data() + pos, &v, sizeof(T));
}
template <typename T>
inline T Peek(const std::vector<uint8_t>& buf, size_t pos) {
  T v;
  std::memcpy(&v, buf.data() + pos, sizeof(T));
  return v;
}

// An encoded metadata value: its type id and its body (what follows the u32 type on disk; for
// an array: u32 element type, u64 count, elements).
struct Val {
  uint32_t type = kU8;
  std::vector<uint8_t> body;
};

namespace val {
template <typename T>
inline Val Scalar(uint32_t type, T x) {
  Val v;
  v.type = type;
  v.body.resize(sizeof(T));
  std::memcpy(v.body.data(), &x, sizeof(T));
  return v;
}
inline Val U8(uint8_t x) { return Scalar(kU8, x); }
inline Val I8(int8_t x) { return Scalar(kI8, x); }
inline Val U16(uint16_t x) { return Scalar(kU16, x); }
inline Val I16(int16_t x) { return Scalar(kI16, x); }
inline Val U32(uint32_t x) { return Scalar(kU32, x); }
inline Val I32(int32_t x) { return Scalar(kI32, x); }
inline Val U64(uint64_t x) { return Scalar(kU64, x); }
inline Val I64(int64_t x) { return Scalar(kI64, x); }
inline Val F32(float x) { return Scalar(kF32, x); }
inline Val F64(double x) { return Scalar(kF64, x); }
inline Val Bool(bool x) { return Scalar(kBool, uint8_t(x ? 1 : 0)); }
inline Val Str(const std::string& s) {
  Val v;
  v.type = kString;
  Bytes b;
  b.Str(s);
  v.body = std::move(b.b);
  return v;
}
// Array of elements that all have type `elem` (their bodies are concatenated).
inline Val Arr(uint32_t elem, const std::vector<Val>& elems) {
  Val v;
  v.type = kArray;
  Bytes b;
  b.U32(elem).U64(elems.size());
  for (const Val& e : elems) b.Append(e.body);
  v.body = std::move(b.b);
  return v;
}
template <typename T>
inline Val ArrOf(uint32_t elem, const std::vector<T>& xs) {
  std::vector<Val> e;
  for (const T& x : xs) e.push_back(Scalar(elem, x));
  return Arr(elem, e);
}
inline Val StrArr(const std::vector<std::string>& xs) {
  std::vector<Val> e;
  for (const std::string& x : xs) e.push_back(Str(x));
  return Arr(kString, e);
}
// Array header with an arbitrary count and raw element bytes (for malformed files).
inline Val RawArr(uint32_t elem, uint64_t count, const std::vector<uint8_t>& elems = {}) {
  Val v;
  v.type = kArray;
  Bytes b;
  b.U32(elem).U64(count).Append(elems);
  v.body = std::move(b.b);
  return v;
}
// `depth` levels of single-element arrays around an empty u8 array: depth 1 = [] of u8.
inline Val Nested(int depth) {
  Val v = RawArr(kU8, 0);
  for (int d = 1; d < depth; ++d) v = Arr(kArray, {v});
  return v;
}
}  // namespace val

struct TensorSpec {
  std::string name;
  uint32_t type = kTF32;
  std::vector<int64_t> ne;               // n_dims = ne.size() unless n_dims is set
  std::optional<uint32_t> n_dims;        // override (malformed files)
  std::optional<uint64_t> offset;        // override of the computed data offset
  std::optional<uint64_t> nbytes;        // override of the computed byte size (data written)
  std::vector<uint8_t> data;             // empty: a deterministic pattern is written
};

// Where things landed in the built file.
struct Layout {
  struct KvPos { size_t key = 0, type = 0, value = 0; };
  struct TensorPos {
    size_t name = 0, n_dims = 0, ne = 0, type = 0, offset = 0;  // positions in the directory
    uint64_t rel_offset = 0;  // offset field value written (relative to the data section)
    uint64_t nbytes = 0;      // bytes of data written
  };
  size_t version = 4, n_tensors = 8, n_kv = 16;
  std::vector<KvPos> kvs;
  std::vector<TensorPos> tensors;
  size_t dir_end = 0;     // end of the tensor directory
  size_t data_start = 0;  // start of the data section (== size when nothing follows)
  // u64 fields (counts, lengths, dims, offsets) for targeted corruption.
  std::vector<size_t> u64_fields;
  std::vector<size_t> u32_fields;
};

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  GgufBuilder& Version(uint32_t v) { version_ = v; return *this; }
  GgufBuilder& Magic(const std::string& m) { magic_ = m; return *this; }
  GgufBuilder& TensorCount(uint64_t n) { n_tensors_override_ = n; return *this; }
  GgufBuilder& KvCount(uint64_t n) { n_kv_override_ = n; return *this; }
  // Alignment used to lay out the data (without writing general.alignment).
  GgufBuilder& LayoutAlignment(uint64_t a) { align_ = a; return *this; }
  // Writes general.alignment (UINT32) and lays out the data with it.
  GgufBuilder& Alignment(uint32_t a) {
    Kv("general.alignment", val::U32(a));
    if (a != 0 && (a & (a - 1)) == 0) align_ = a;
    return *this;
  }
  // Pads the directory to the alignment even when there are no tensors (real writers do).
  GgufBuilder& PadWithoutTensors(bool p) { pad_without_tensors_ = p; return *this; }
  // Extra bytes appended after everything.
  GgufBuilder& Trailer(const std::vector<uint8_t>& t) { trailer_ = t; return *this; }

  GgufBuilder& Kv(const std::string& key, const Val& v) {
    kvs_.push_back({key, v.type, v.body});
    return *this;
  }
  // Key/value with an explicit type id (may disagree with the body: malformed files).
  GgufBuilder& KvRaw(const std::string& key, uint32_t type, const std::vector<uint8_t>& body) {
    kvs_.push_back({key, type, body});
    return *this;
  }

  GgufBuilder& Tensor(const std::string& name, uint32_t type, std::vector<int64_t> ne) {
    TensorSpec t;
    t.name = name;
    t.type = type;
    t.ne = std::move(ne);
    return Tensor(t);
  }
  GgufBuilder& Tensor(const TensorSpec& t) { tensors_.push_back(t); return *this; }

  // Byte size of a tensor as the format defines it. 0 (no data written) for types unknown to
  // the builder, negative dimensions, and sizes over 16 MiB (absurd shapes in malformed files).
  static uint64_t NBytes(const TensorSpec& t) {
    int64_t block = 0;
    uint64_t bytes = 0;
    TypeLayout(t.type, &block, &bytes);
    if (block == 0) return 0;
    unsigned __int128 n = 1;
    for (int64_t d : t.ne) {
      if (d < 0) return 0;
      n *= uint64_t(d);
      if (n > (unsigned __int128)(1) << 64) return 0;
    }
    const unsigned __int128 total = n / uint64_t(block) * bytes;
    return total > (uint64_t(1) << 24) ? 0 : uint64_t(total);
  }

  std::vector<uint8_t> Build(Layout* layout = nullptr) const {
    Layout lay;
    Bytes b;
    b.Raw(magic_.data(), magic_.size());
    lay.version = b.size();
    b.U32(version_);
    lay.n_tensors = b.size();
    lay.u64_fields.push_back(b.size());
    b.U64(n_tensors_override_ ? *n_tensors_override_ : tensors_.size());
    lay.n_kv = b.size();
    lay.u64_fields.push_back(b.size());
    b.U64(n_kv_override_ ? *n_kv_override_ : kvs_.size());
    for (const KvEntry& kv : kvs_) {
      Layout::KvPos p;
      p.key = b.size();
      lay.u64_fields.push_back(b.size());
      b.Str(kv.key);
      p.type = b.size();
      lay.u32_fields.push_back(b.size());
      b.U32(kv.type);
      p.value = b.size();
      if (kv.type == kString) lay.u64_fields.push_back(b.size());
      if (kv.type == kArray) {
        lay.u32_fields.push_back(b.size());
        lay.u64_fields.push_back(b.size() + 4);
      }
      b.Append(kv.body);
      lay.kvs.push_back(p);
    }
    // Offsets: sequential, each aligned.
    std::vector<uint64_t> offsets, sizes;
    uint64_t next = 0;
    for (const TensorSpec& t : tensors_) {
      const uint64_t nb = t.nbytes ? *t.nbytes : NBytes(t);
      next = (next + align_ - 1) / align_ * align_;
      offsets.push_back(t.offset ? *t.offset : next);
      sizes.push_back(nb);
      next += nb;
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorSpec& t = tensors_[i];
      Layout::TensorPos p;
      p.name = b.size();
      lay.u64_fields.push_back(b.size());
      b.Str(t.name);
      p.n_dims = b.size();
      lay.u32_fields.push_back(b.size());
      b.U32(t.n_dims ? *t.n_dims : uint32_t(t.ne.size()));
      p.ne = b.size();
      for (int64_t d : t.ne) {
        lay.u64_fields.push_back(b.size());
        b.I64(d);
      }
      p.type = b.size();
      lay.u32_fields.push_back(b.size());
      b.U32(t.type);
      p.offset = b.size();
      lay.u64_fields.push_back(b.size());
      b.U64(offsets[i]);
      p.rel_offset = offsets[i];
      p.nbytes = sizes[i];
      lay.tensors.push_back(p);
    }
    lay.dir_end = b.size();
    if (!tensors_.empty() || pad_without_tensors_) b.Pad(align_);
    lay.data_start = b.size();
    // Data: written at the computed (not overridden) positions, so overrides test the reader.
    uint64_t pos = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorSpec& t = tensors_[i];
      pos = (pos + align_ - 1) / align_ * align_;
      while (b.size() < lay.data_start + pos) b.U8(0);
      if (!t.data.empty()) {
        b.Append(t.data);
        for (uint64_t k = t.data.size(); k < sizes[i]; ++k) b.U8(0);
      } else {
        for (uint64_t k = 0; k < sizes[i]; ++k) b.U8(uint8_t(i * 31 + k * 7 + 1));
      }
      pos += sizes[i];
    }
    b.Append(trailer_);
    if (layout) *layout = std::move(lay);
    return std::move(b.b);
  }

 private:
  struct KvEntry {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> body;
  };
  uint32_t version_;
  std::string magic_ = "GGUF";
  std::optional<uint64_t> n_tensors_override_, n_kv_override_;
  uint64_t align_ = 32;
  bool pad_without_tensors_ = false;
  std::vector<uint8_t> trailer_;
  std::vector<KvEntry> kvs_;
  std::vector<TensorSpec> tensors_;
};

}  // namespace zf::gguf::testutil
