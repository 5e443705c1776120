// GGUF reader (v2/v3): memory-maps a file, parses and validates header, metadata and tensor
// directory. Nothing is trusted: every count, length, offset and size is checked against the
// file before use, and a bad file yields Code::kFormat with a message naming what and where.
//
// Format (little-endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv, then n_kv
// key/value pairs (gguf string key, u32 value type, value), then n_tensors tensor infos (name,
// u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset), padding to `general.alignment`
// (default 32), then the tensor data section. A gguf string is u64 length + bytes (no NUL).
// An array is u32 element type + u64 count + elements (arrays may nest).
//
// Split models (llama-gguf-split, and the large files on Hugging Face): NAME-00001-of-0000N.gguf
// holds the metadata with `split.count` = N; Open of that first part opens the other parts by
// the same naming rule, checks their `split.no` / `split.count`, and presents one file: the first
// part's metadata and every part's tensors (`split.tensors.count` of them, names unique).
//
// Thread-safety: a GgufFile is immutable after Open and may be read from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/ggml_types.h"

namespace zf::gguf {

// On-disk metadata value type ids; never renumber.
enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* ValueTypeName(ValueType t);

// One metadata value. Strings point into the file mapping (valid while the GgufFile lives).
struct Value {
  ValueType type = ValueType::UINT8;
  uint64_t u = 0;         // unsigned integers and BOOL (0/1)
  int64_t i = 0;          // signed integers
  double f = 0;           // FLOAT32 / FLOAT64
  std::string_view str;   // STRING

  // ARRAY: elem_type + count. Scalar elements are left in the file (raw little-endian at
  // `raw`, count * element size bytes); STRING elements are in `strings`; nested ARRAY
  // elements are in `nested`.
  ValueType elem_type = ValueType::UINT8;
  uint64_t count = 0;
  const uint8_t* raw = nullptr;
  std::vector<std::string_view> strings;
  std::vector<Value> nested;
};

struct KeyValue {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  GgmlType type = GgmlType::F32;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
  uint64_t offset = 0;            // relative to the data section
  const uint8_t* data = nullptr;  // mapped bytes (validated to lie inside the file)
  uint64_t nbytes = 0;
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct OpenOptions {
  bool no_mmap = false;  // read the whole file into memory instead of mapping
};

class GgufFile {
 public:
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  // Opens and validates (with the other parts of a split model). kIo if a file cannot be
  // opened/mapped, kFormat if malformed or a part is missing or does not belong.
  static Status Open(const std::string& path, const OpenOptions& options,
                     std::unique_ptr<GgufFile>* out);
  // Parses a caller-owned buffer that must outlive the result (tests, fuzzing).
  static Status FromMemory(const void* data, size_t size, std::unique_ptr<GgufFile>* out);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return total_size_; }  // every part's bytes
  int32_t n_parts() const { return int32_t(1 + parts_.size()); }
  // True when the bytes are a read-only mapping of the file (not a private copy): pages of it
  // may be dropped (madvise) and are read back from the page cache on the next access.
  bool file_backed() const { return file_backed_; }
  const std::vector<KeyValue>& metadata() const { return kv_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const Value* Find(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;

  // Typed getters: kNotFound if absent, kFormat if the stored type does not fit (integers of
  // any width convert when the value is in range; FLOAT32/64 convert to float).
  Status GetString(std::string_view key, std::string_view* out) const;
  Status GetU32(std::string_view key, uint32_t* out) const;
  Status GetI32(std::string_view key, int32_t* out) const;
  Status GetF32(std::string_view key, float* out) const;
  Status GetBool(std::string_view key, bool* out) const;
  Status GetStringArray(std::string_view key, std::vector<std::string_view>* out) const;
  Status GetF32Array(std::string_view key, std::vector<float>* out) const;
  Status GetI32Array(std::string_view key, std::vector<int32_t>* out) const;

  // Text form of a value for zf_model_meta: decimal numbers, true/false, strings verbatim,
  // arrays as "[a, b, ...]" (strings inside arrays JSON-quoted).
  static std::string ValueToString(const Value& v);

 private:
  GgufFile() = default;
  static Status OpenOne(const std::string& path, const OpenOptions& options, std::unique_ptr<GgufFile>* out);
  Status Parse();
  Status OpenParts(const std::string& path, const OpenOptions& options);

  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t total_size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<KeyValue> kv_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> key_index_;     // key -> kv_ index
  std::unordered_map<std::string_view, size_t> tensor_index_;  // name -> tensors_ index
  // Mapping / buffer ownership (implementation-defined).
  void* map_ = nullptr;
  std::unique_ptr<uint8_t[]> owned_;
  bool mapped_ = false;
  bool file_backed_ = false;
  std::vector<std::unique_ptr<GgufFile>> parts_;  // a split model's parts 2..N (their mappings)
};

}  // namespace zf::gguf
