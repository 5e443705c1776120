// GGUF parsing and validation. Every read goes through Cursor, which checks the remaining
// length first, so a malformed file can only produce a Status, never an over-read.
#include "gguf/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/utf8.h"

namespace zf::gguf {
namespace {

// Nested arrays deeper than this are rejected (real files use depth 1).
constexpr int kMaxArrayDepth = 8;

size_t ScalarSize(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
    default: return 0;
  }
}

bool KnownType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::FLOAT64); }

class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  Status Read(void* dst, uint64_t n, const std::string& what) {
    if (n > remaining()) return Truncated(n, what);
    std::memcpy(dst, base_ + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  template <typename T>
  Status Get(T* v, const std::string& what) { return Read(v, sizeof(T), what); }

  Status Skip(uint64_t n, const std::string& what) {
    if (n > remaining()) return Truncated(n, what);
    pos_ += n;
    return Status::Ok();
  }

  Status String(std::string_view* out, const std::string& what) {
    uint64_t len = 0;
    ZF_RETURN_IF_ERROR(Get(&len, what + " length"));
    if (len > remaining()) {
      return FormatError(what + ": string length " + std::to_string(len) + " exceeds the remaining " +
                         std::to_string(remaining()) + " bytes at offset " + std::to_string(pos_));
    }
    *out = std::string_view(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  const uint8_t* here() const { return base_ + pos_; }

 private:
  Status Truncated(uint64_t n, const std::string& what) const {
    return FormatError("truncated file: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                       std::to_string(pos_) + " but only " + std::to_string(remaining()) + " remain");
  }

  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

Status ReadValue(Cursor& c, ValueType type, Value* v, int depth, const std::string& where);

Status ReadScalar(Cursor& c, ValueType type, Value* v, const std::string& where) {
  v->type = type;
  switch (type) {
    case ValueType::UINT8: { uint8_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->u = x; v->i = x; v->f = x; break; }
    case ValueType::INT8: { int8_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->i = x; v->u = uint64_t(x); v->f = x; break; }
    case ValueType::UINT16: { uint16_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->u = x; v->i = x; v->f = x; break; }
    case ValueType::INT16: { int16_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->i = x; v->u = uint64_t(x); v->f = x; break; }
    case ValueType::UINT32: { uint32_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->u = x; v->i = x; v->f = x; break; }
    case ValueType::INT32: { int32_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->i = x; v->u = uint64_t(x); v->f = x; break; }
    case ValueType::UINT64: { uint64_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->u = x; v->i = int64_t(x); v->f = double(x); break; }
    case ValueType::INT64: { int64_t x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->i = x; v->u = uint64_t(x); v->f = double(x); break; }
    case ValueType::FLOAT32: { float x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->f = x; break; }
    case ValueType::FLOAT64: { double x = 0; ZF_RETURN_IF_ERROR(c.Get(&x, where)); v->f = x; break; }
    case ValueType::BOOL: {
      uint8_t x = 0;
      ZF_RETURN_IF_ERROR(c.Get(&x, where));
      if (x > 1) return FormatError(where + ": boolean value " + std::to_string(x) + " is not 0 or 1");
      v->u = x;
      v->i = x;
      break;
    }
    default: return InternalError("ReadScalar on a non-scalar type");
  }
  return Status::Ok();
}

Status ReadArray(Cursor& c, Value* v, int depth, const std::string& where) {
  if (depth >= kMaxArrayDepth) return FormatError(where + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  uint32_t et = 0;
  uint64_t count = 0;
  ZF_RETURN_IF_ERROR(c.Get(&et, where + " element type"));
  if (!KnownType(et)) return FormatError(where + ": unknown array element type " + std::to_string(et));
  ZF_RETURN_IF_ERROR(c.Get(&count, where + " element count"));
  v->type = ValueType::ARRAY;
  v->elem_type = static_cast<ValueType>(et);
  v->count = count;
  const size_t scalar = ScalarSize(v->elem_type);
  if (scalar > 0) {
    // Check the byte size without overflow before touching the data.
    if (count > c.remaining() / scalar) {
      return FormatError(where + ": array of " + std::to_string(count) + " elements of " + std::to_string(scalar) +
                         " bytes exceeds the remaining " + std::to_string(c.remaining()) + " bytes at offset " +
                         std::to_string(c.pos()));
    }
    v->raw = c.here();
    if (v->elem_type == ValueType::BOOL) {
      for (uint64_t i = 0; i < count; ++i) {
        if (v->raw[i] > 1) return FormatError(where + ": boolean element " + std::to_string(i) + " is not 0 or 1");
      }
    }
    return c.Skip(count * scalar, where);
  }
  // Strings need >= 8 bytes each, nested arrays >= 12: bound the count before reserving.
  const uint64_t min_elem = v->elem_type == ValueType::STRING ? 8 : 12;
  if (count > c.remaining() / min_elem) {
    return FormatError(where + ": array count " + std::to_string(count) + " cannot fit in the remaining " +
                       std::to_string(c.remaining()) + " bytes at offset " + std::to_string(c.pos()));
  }
  if (v->elem_type == ValueType::STRING) {
    for (uint64_t i = 0; i < count; ++i) {
      v->strings.emplace_back();
      ZF_RETURN_IF_ERROR(c.String(&v->strings.back(), where + " element " + std::to_string(i)));
    }
    return Status::Ok();
  }
  // Grow as elements parse (not resize(count) up front), so memory stays proportional to the
  // bytes actually read even when a hostile count is large.
  for (uint64_t i = 0; i < count; ++i) {
    v->nested.emplace_back();
    ZF_RETURN_IF_ERROR(ReadArray(c, &v->nested.back(), depth + 1, where + "[" + std::to_string(i) + "]"));
  }
  return Status::Ok();
}

Status ReadValue(Cursor& c, ValueType type, Value* v, int depth, const std::string& where) {
  if (type == ValueType::STRING) {
    v->type = type;
    return c.String(&v->str, where);
  }
  if (type == ValueType::ARRAY) return ReadArray(c, v, depth, where);
  return ReadScalar(c, type, v, where);
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string FormatDouble(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

// Scalar element i of a raw array as a Value.
Value ArrayElement(const Value& a, uint64_t i) {
  Value v;
  Cursor c(a.raw + i * ScalarSize(a.elem_type), ScalarSize(a.elem_type));
  (void)ReadScalar(c, a.elem_type, &v, "");
  return v;
}

}  // namespace

const char* ValueTypeName(ValueType t) {
  static const char* names[] = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
  const uint32_t i = static_cast<uint32_t>(t);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

GgufFile::~GgufFile() {
  if (mapped_ && map_ != nullptr) munmap(map_, size_);
}

Status GgufFile::Open(const std::string& path, const OpenOptions& options, std::unique_ptr<GgufFile>* out) {
  out->reset();
  std::unique_ptr<GgufFile> f;
  ZF_RETURN_IF_ERROR(OpenOne(path, options, &f));
  if (f->Find("split.count") != nullptr) ZF_RETURN_IF_ERROR(f->OpenParts(path, options));
  *out = std::move(f);
  return Status::Ok();
}

namespace {
// llama.cpp's split naming: PREFIX-00001-of-00003.gguf (1-based part, five digits each).
std::string PartSuffix(uint32_t part, uint32_t count) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "-%05u-of-%05u.gguf", part, count);
  return buf;
}
}  // namespace

Status GgufFile::OpenParts(const std::string& path, const OpenOptions& options) {
  uint32_t count = 0, no = 0;
  ZF_RETURN_IF_ERROR(GetU32("split.count", &count));
  if (count <= 1) return Status::Ok();  // a model written as one part
  if (count > 9999) return FormatError("'" + path + "': split.count " + std::to_string(count) + " is not a plausible number of parts");
  Status s = GetU32("split.no", &no);
  if (!s.ok()) return FormatError("'" + path + "': split.count is " + std::to_string(count) + " but split.no is missing or not an integer");
  if (no != 0) {
    return FormatError("'" + path + "' is part " + std::to_string(no + 1) + " of " + std::to_string(count) +
                       " of a split model: load the first part (the file ending in " + PartSuffix(1, count) + ")");
  }
  const std::string first = PartSuffix(1, count);
  if (path.size() <= first.size() || path.compare(path.size() - first.size(), first.size(), first) != 0) {
    return FormatError("'" + path + "' is the first of " + std::to_string(count) +
                       " parts of a split model, but its name does not end in " + first +
                       ", so the other parts cannot be found (keep the names llama-gguf-split gave them)");
  }
  const std::string prefix = path.substr(0, path.size() - first.size());
  for (uint32_t i = 1; i < count; ++i) {
    const std::string part_path = prefix + PartSuffix(i + 1, count);
    std::unique_ptr<GgufFile> part;
    Status ps = OpenOne(part_path, options, &part);
    if (!ps.ok()) {
      return Status(ps.code(), "split model part " + std::to_string(i + 1) + " of " + std::to_string(count) + ": " + ps.message());
    }
    uint32_t part_no = 0, part_count = 0;
    if (!part->GetU32("split.no", &part_no).ok() || !part->GetU32("split.count", &part_count).ok()) {
      return FormatError("'" + part_path + "' has no split.no / split.count: it is not a part of a split model");
    }
    if (part_no != i || part_count != count) {
      return FormatError("'" + part_path + "' says it is part " + std::to_string(part_no + 1) + " of " +
                         std::to_string(part_count) + ", expected part " + std::to_string(i + 1) + " of " + std::to_string(count));
    }
    if (part->file_backed_ != file_backed_) file_backed_ = false;
    total_size_ += part->size_;
    parts_.push_back(std::move(part));
  }
  for (const std::unique_ptr<GgufFile>& part : parts_) {
    for (const TensorInfo& t : part->tensors_) {
      if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
        return FormatError("split model: tensor '" + std::string(t.name) + "' appears in more than one part");
      }
      tensors_.push_back(t);
    }
  }
  uint32_t expected = 0;
  if (GetU32("split.tensors.count", &expected).ok() && expected != tensors_.size()) {
    return FormatError("split model: split.tensors.count is " + std::to_string(expected) + " but the " +
                       std::to_string(count) + " parts hold " + std::to_string(tensors_.size()) + " tensors");
  }
  return Status::Ok();
}

Status GgufFile::OpenOne(const std::string& path, const OpenOptions& options, std::unique_ptr<GgufFile>* out) {
  out->reset();
  // O_NONBLOCK: opening a FIFO with no writer (or a device that waits for a peer) would block
  // forever; the open returns at once and the regular-file check below refuses it. O_NONBLOCK
  // has no effect on reads of regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return IoError("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return IoError("cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("'" + path + "' is not a regular file");
  }
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->size_ = uint64_t(st.st_size);
  f->total_size_ = f->size_;
  if (f->size_ == 0) {
    ::close(fd);
    return FormatError("'" + path + "' is empty (0 bytes), not a GGUF file");
  }
  if (!options.no_mmap) {
    void* p = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return IoError("cannot map '" + path + "': " + std::strerror(e));
    }
    f->map_ = p;
    f->mapped_ = true;
    f->file_backed_ = true;
    f->base_ = static_cast<const uint8_t*>(p);
  } else {
    // Anonymous memory asking for transparent huge pages: the weights are then read through
    // far fewer TLB entries than a 4 KiB-page file mapping needs.
    void* p = mmap(nullptr, f->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return Status(Code::kOutOfMemory, "cannot allocate " + std::to_string(f->size_) + " bytes to read '" + path + "'");
    }
#ifdef MADV_HUGEPAGE
    madvise(p, f->size_, MADV_HUGEPAGE);
#endif
    f->map_ = p;
    f->mapped_ = true;
    uint8_t* dst = static_cast<uint8_t*>(p);
    uint64_t done = 0;
    while (done < f->size_) {
      const ssize_t n = ::pread(fd, dst + done, f->size_ - done, off_t(done));
      if (n <= 0) {
        const int e = n < 0 ? errno : EIO;
        ::close(fd);
        return IoError("cannot read '" + path + "': " + std::strerror(e));
      }
      done += uint64_t(n);
    }
    f->base_ = dst;
  }
  ::close(fd);
  Status s = f->Parse();
  if (!s.ok()) return Status(s.code(), "'" + path + "': " + s.message());
  *out = std::move(f);
  return Status::Ok();
}

Status GgufFile::FromMemory(const void* data, size_t size, std::unique_ptr<GgufFile>* out) {
  out->reset();
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->base_ = static_cast<const uint8_t*>(data);
  f->size_ = size;
  f->total_size_ = size;
  ZF_RETURN_IF_ERROR(f->Parse());
  *out = std::move(f);
  return Status::Ok();
}

Status GgufFile::Parse() {
  Cursor c(base_, size_);
  if (size_ < 24) {
    if (size_ >= 4 && std::memcmp(base_, "GGUF", 4) != 0) {
      return FormatError("not a GGUF file (bad magic '" + std::string(reinterpret_cast<const char*>(base_), 4) + "')");
    }
    return FormatError("truncated header: file is " + std::to_string(size_) + " bytes, a GGUF header needs 24");
  }
  char magic[4];
  ZF_RETURN_IF_ERROR(c.Read(magic, 4, "magic"));
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    std::string m;
    for (char ch : magic) m += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    return FormatError("not a GGUF file (bad magic '" + m + "')");
  }
  ZF_RETURN_IF_ERROR(c.Get(&version_, "version"));
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xFFFF) == 0 && version_ != 0) {
      return FormatError("unsupported GGUF version " + std::to_string(version_) +
                         " (looks byte-swapped: big-endian files are not supported)");
    }
    return FormatError("unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  ZF_RETURN_IF_ERROR(c.Get(&n_tensors, "tensor count"));
  ZF_RETURN_IF_ERROR(c.Get(&n_kv, "metadata count"));
  // Each key/value needs >= 13 bytes, each tensor info >= 28: reject absurd counts up front.
  if (n_kv > c.remaining() / 13) {
    return FormatError("metadata count " + std::to_string(n_kv) + " cannot fit in a file of " + std::to_string(size_) + " bytes");
  }
  if (n_tensors > c.remaining() / 28) {
    return FormatError("tensor count " + std::to_string(n_tensors) + " cannot fit in a file of " + std::to_string(size_) + " bytes");
  }

  kv_.reserve(std::min<uint64_t>(n_kv, 4096));  // grows with what parses (see ReadArray)
  std::unordered_map<std::string_view, size_t> key_index;
  key_index.reserve(std::min<uint64_t>(n_kv, 4096));
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string where = "metadata key #" + std::to_string(i);
    KeyValue& kv = kv_.emplace_back();
    ZF_RETURN_IF_ERROR(c.String(&kv.key, where));
    size_t bad = 0;
    if (!IsValidUtf8(kv.key, &bad)) return FormatError(where + ": invalid UTF-8 in key at byte " + std::to_string(bad));
    if (kv.key.empty()) return FormatError(where + ": empty key");
    const std::string named = where + " ('" + std::string(kv.key) + "')";
    uint32_t type = 0;
    ZF_RETURN_IF_ERROR(c.Get(&type, named + " type"));
    if (!KnownType(type)) return FormatError(named + ": unknown value type " + std::to_string(type));
    ZF_RETURN_IF_ERROR(ReadValue(c, static_cast<ValueType>(type), &kv.value, 0, named));
    if (!key_index.emplace(kv.key, i).second) return FormatError(named + ": duplicate key");
  }

  if (const Value* a = Find("general.alignment")) {
    if (a->type != ValueType::UINT32) {
      return FormatError("general.alignment must be UINT32, found " + std::string(ValueTypeName(a->type)));
    }
    if (a->u == 0 || (a->u & (a->u - 1)) != 0) {
      return FormatError("general.alignment " + std::to_string(a->u) + " is not a nonzero power of two");
    }
    alignment_ = a->u;
  }

  tensors_.resize(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const std::string where = "tensor #" + std::to_string(i);
    TensorInfo& t = tensors_[i];
    ZF_RETURN_IF_ERROR(c.String(&t.name, where + " name"));
    const std::string named = "tensor '" + std::string(t.name) + "'";
    size_t bad = 0;
    if (!IsValidUtf8(t.name, &bad)) return FormatError(where + ": invalid UTF-8 in name at byte " + std::to_string(bad));
    ZF_RETURN_IF_ERROR(c.Get(&t.n_dims, named + " n_dims"));
    if (t.n_dims == 0 || t.n_dims > 4) {
      return FormatError(named + ": n_dims " + std::to_string(t.n_dims) + " is outside 1..4");
    }
    for (uint32_t d = 0; d < t.n_dims; ++d) ZF_RETURN_IF_ERROR(c.Get(&t.ne[d], named + " dimension"));
    uint32_t type = 0;
    ZF_RETURN_IF_ERROR(c.Get(&type, named + " type"));
    ZF_RETURN_IF_ERROR(c.Get(&t.offset, named + " offset"));
    const GgmlTypeTraits* tr = GetTypeTraits(type);
    if (tr == nullptr) return FormatError(named + ": unknown tensor type id " + std::to_string(type));
    t.type = static_cast<GgmlType>(type);
    // Element count without overflow: every dim >= 0 and the product of the dims (zeros
    // counted as 1, so no partial product of a zero-sized tensor overflows either) < 2^62.
    int64_t n = 1, n_nonzero = 1;
    for (uint32_t d = 0; d < 4; ++d) {
      if (t.ne[d] < 0) return FormatError(named + ": negative dimension " + std::to_string(t.ne[d]));
      const int64_t e = t.ne[d] == 0 ? 1 : t.ne[d];
      if (n_nonzero > (int64_t(1) << 62) / e) return FormatError(named + ": element count overflows");
      n_nonzero *= e;
      n *= t.ne[d];
    }
    if (t.ne[0] % tr->block_size != 0) {
      return FormatError(named + ": row length " + std::to_string(t.ne[0]) + " is not a multiple of the " + tr->name +
                         " block size " + std::to_string(tr->block_size));
    }
    // Byte size in 128 bits: a huge element count times the type size must not wrap.
    const unsigned __int128 nbytes = static_cast<unsigned __int128>(n / tr->block_size) * tr->type_size;
    if (nbytes > size_) {
      return FormatError(named + ": data size of " + std::to_string(n) + " " + tr->name +
                         " elements exceeds the data section (the file has " + std::to_string(size_) + " bytes)");
    }
    t.nbytes = static_cast<uint64_t>(nbytes);
    if (t.offset % alignment_ != 0) {
      return FormatError(named + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                         std::to_string(alignment_));
    }
  }

  // Data section starts at the next multiple of the alignment after the directory.
  const uint64_t dir_end = c.pos();
  const uint64_t data_start = (dir_end + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_start > size_) {
    return FormatError("tensor data section would start at offset " + std::to_string(data_start) +
                       " beyond the file size " + std::to_string(size_));
  }
  const uint64_t data_size = data_start <= size_ ? size_ - data_start : 0;
  std::unordered_map<std::string_view, size_t> names;
  names.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorInfo& t = tensors_[i];
    const std::string named = "tensor '" + std::string(t.name) + "'";
    if (t.offset > data_size || t.nbytes > data_size - t.offset) {
      return FormatError(named + ": data offset " + std::to_string(t.offset) + " + size " + std::to_string(t.nbytes) +
                         " exceeds the data section of " + std::to_string(data_size) + " bytes (file size " +
                         std::to_string(size_) + ")");
    }
    t.data = base_ + data_start + t.offset;
    if (!names.emplace(t.name, i).second) return FormatError(named + ": duplicate tensor name");
  }
  tensor_index_ = std::move(names);
  key_index_ = std::move(key_index);
  return Status::Ok();
}

const Value* GgufFile::Find(std::string_view key) const {
  auto it = key_index_.find(key);
  if (it != key_index_.end()) return &kv_[it->second].value;
  // Parse() looks keys up before the index is final.
  for (const KeyValue& kv : kv_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status TypeMismatch(std::string_view key, const char* want, const Value& v) {
  return FormatError("metadata '" + std::string(key) + "' is " + ValueTypeName(v.type) + ", expected " + want);
}

bool IsInteger(ValueType t) {
  return t == ValueType::UINT8 || t == ValueType::INT8 || t == ValueType::UINT16 || t == ValueType::INT16 ||
         t == ValueType::UINT32 || t == ValueType::INT32 || t == ValueType::UINT64 || t == ValueType::INT64;
}
bool IsSigned(ValueType t) {
  return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}

}  // namespace

Status GgufFile::GetString(std::string_view key, std::string_view* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (v->type != ValueType::STRING) return TypeMismatch(key, "STRING", *v);
  *out = v->str;
  return Status::Ok();
}

Status GgufFile::GetU32(std::string_view key, uint32_t* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (!IsInteger(v->type)) return TypeMismatch(key, "an integer", *v);
  if ((IsSigned(v->type) && v->i < 0) || v->u > std::numeric_limits<uint32_t>::max()) {
    return FormatError("metadata '" + std::string(key) + "' value is out of range for UINT32");
  }
  *out = uint32_t(v->u);
  return Status::Ok();
}

Status GgufFile::GetI32(std::string_view key, int32_t* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (!IsInteger(v->type)) return TypeMismatch(key, "an integer", *v);
  const bool neg = IsSigned(v->type) && v->i < 0;
  if (neg ? v->i < std::numeric_limits<int32_t>::min() : v->u > uint64_t(std::numeric_limits<int32_t>::max())) {
    return FormatError("metadata '" + std::string(key) + "' value is out of range for INT32");
  }
  *out = neg ? int32_t(v->i) : int32_t(v->u);
  return Status::Ok();
}

Status GgufFile::GetF32(std::string_view key, float* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (v->type != ValueType::FLOAT32 && v->type != ValueType::FLOAT64 && !IsInteger(v->type)) {
    return TypeMismatch(key, "a number", *v);
  }
  *out = IsInteger(v->type) ? (IsSigned(v->type) ? float(v->i) : float(v->u)) : float(v->f);
  return Status::Ok();
}

Status GgufFile::GetBool(std::string_view key, bool* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (v->type != ValueType::BOOL) return TypeMismatch(key, "BOOL", *v);
  *out = v->u != 0;
  return Status::Ok();
}

Status GgufFile::GetStringArray(std::string_view key, std::vector<std::string_view>* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (v->type != ValueType::ARRAY || v->elem_type != ValueType::STRING) return TypeMismatch(key, "ARRAY of STRING", *v);
  *out = v->strings;
  return Status::Ok();
}

Status GgufFile::GetF32Array(std::string_view key, std::vector<float>* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (v->type != ValueType::ARRAY || ScalarSize(v->elem_type) == 0) return TypeMismatch(key, "ARRAY of numbers", *v);
  out->resize(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    const Value e = ArrayElement(*v, i);
    (*out)[i] = (e.type == ValueType::FLOAT32 || e.type == ValueType::FLOAT64) ? float(e.f)
                : IsSigned(e.type) ? float(e.i) : float(e.u);
  }
  return Status::Ok();
}

Status GgufFile::GetI32Array(std::string_view key, std::vector<int32_t>* out) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("no metadata key '" + std::string(key) + "'");
  if (v->type != ValueType::ARRAY || !IsInteger(v->elem_type)) return TypeMismatch(key, "ARRAY of integers", *v);
  out->resize(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    const Value e = ArrayElement(*v, i);
    const bool neg = IsSigned(e.type) && e.i < 0;
    if (neg ? e.i < std::numeric_limits<int32_t>::min() : e.u > uint64_t(std::numeric_limits<int32_t>::max())) {
      return FormatError("metadata '" + std::string(key) + "' element " + std::to_string(i) + " is out of range for INT32");
    }
    (*out)[i] = neg ? int32_t(e.i) : int32_t(e.u);
  }
  return Status::Ok();
}

std::string GgufFile::ValueToString(const Value& v) {
  switch (v.type) {
    case ValueType::STRING: return std::string(v.str);
    case ValueType::BOOL: return v.u ? "true" : "false";
    case ValueType::FLOAT32: case ValueType::FLOAT64: return FormatDouble(v.f);
    case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64: return std::to_string(v.i);
    case ValueType::ARRAY: {
      std::string out = "[";
      for (uint64_t i = 0; i < v.count; ++i) {
        if (i) out += ", ";
        if (v.elem_type == ValueType::STRING) out += Quote(v.strings[i]);
        else if (v.elem_type == ValueType::ARRAY) out += ValueToString(v.nested[i]);
        else out += ValueToString(ArrayElement(v, i));
      }
      return out + "]";
    }
    default: return std::to_string(v.u);
  }
}

}  // namespace zf::gguf
