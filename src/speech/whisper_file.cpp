#include "speech/whisper_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zf::speech {
namespace {

constexpr uint32_t kMagic = 0x67676d6c;  // "ggml" as a little-endian uint32
constexpr int32_t kMaxDim = int32_t(1) << 24;

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t pos() const { return o_; }
  Status I32(const char* what, int32_t* v) {
    if (n_ - o_ < 4) return FormatError(std::string("whisper file truncated reading ") + what + " at byte " + std::to_string(o_));
    std::memcpy(v, p_ + o_, 4);
    o_ += 4;
    return Status::Ok();
  }
  Status Bytes(const std::string& what, size_t len, const uint8_t** out) {
    if (n_ - o_ < len)
      return FormatError("whisper file truncated: " + what + " needs " + std::to_string(len) + " bytes at byte " +
                         std::to_string(o_) + ", file has " + std::to_string(n_));
    *out = p_ + o_;
    o_ += len;
    return Status::Ok();
  }
  bool done() const { return o_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t o_ = 0;
};

bool WeightTypeOk(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::Q4_0: case GgmlType::Q4_1:
    case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
      return true;
    default:
      return false;
  }
}

}  // namespace

WhisperFile::~WhisperFile() {
  if (map_) munmap(map_, size_);
}

Status WhisperFile::Open(const std::string& path, std::unique_ptr<WhisperFile>* out) {
  out->reset();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open whisper model '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return IoError("whisper model '" + path + "' is not a regular file");
  }
  std::unique_ptr<WhisperFile> f(new WhisperFile());
  f->size_ = size_t(st.st_size);
  if (f->size_ == 0) {
    close(fd);
    return FormatError("whisper model '" + path + "' is empty");
  }
  void* m = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return IoError("cannot map whisper model '" + path + "': " + std::strerror(errno));
  f->map_ = m;
  f->base_ = static_cast<const uint8_t*>(m);
  Status s = f->Parse();
  if (!s.ok()) return Status(s.code(), "'" + path + "': " + s.message());
  *out = std::move(f);
  return Status::Ok();
}

Status WhisperFile::FromMemory(const void* data, size_t size, std::unique_ptr<WhisperFile>* out) {
  out->reset();
  std::unique_ptr<WhisperFile> f(new WhisperFile());
  f->owned_.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
  f->base_ = f->owned_.data();
  f->size_ = size;
  ZF_RETURN_IF_ERROR(f->Parse());
  *out = std::move(f);
  return Status::Ok();
}

Status WhisperFile::Parse() {
  Reader r(base_, size_);
  int32_t magic = 0;
  ZF_RETURN_IF_ERROR(r.I32("magic", &magic));
  if (uint32_t(magic) != kMagic) {
    char b[64];
    std::snprintf(b, sizeof b, "bad magic 0x%08x (expected 0x%08x, \"ggml\")", uint32_t(magic), kMagic);
    return FormatError(b);
  }
  struct Field { const char* name; int32_t* v; int32_t lo, hi; };
  const Field fields[] = {
      {"n_vocab", &hp_.n_vocab, 1, 1 << 20},      {"n_audio_ctx", &hp_.n_audio_ctx, 1, 1 << 16},
      {"n_audio_state", &hp_.n_audio_state, 1, 1 << 16}, {"n_audio_head", &hp_.n_audio_head, 1, 1024},
      {"n_audio_layer", &hp_.n_audio_layer, 1, 1024},  {"n_text_ctx", &hp_.n_text_ctx, 1, 1 << 16},
      {"n_text_state", &hp_.n_text_state, 1, 1 << 16}, {"n_text_head", &hp_.n_text_head, 1, 1024},
      {"n_text_layer", &hp_.n_text_layer, 1, 1024},    {"n_mels", &hp_.n_mels, 1, 1024},
      {"ftype", &hp_.ftype, 0, 1 << 20},
  };
  for (const Field& f : fields) {
    ZF_RETURN_IF_ERROR(r.I32(f.name, f.v));
    if (*f.v < f.lo || *f.v > f.hi)
      return FormatError(std::string("hparam ") + f.name + " = " + std::to_string(*f.v) + " is out of range [" +
                         std::to_string(f.lo) + ", " + std::to_string(f.hi) + "]");
  }
  if (hp_.n_audio_state % hp_.n_audio_head != 0)
    return FormatError("hparam n_audio_state " + std::to_string(hp_.n_audio_state) + " is not a multiple of n_audio_head " +
                       std::to_string(hp_.n_audio_head));
  if (hp_.n_text_state % hp_.n_text_head != 0)
    return FormatError("hparam n_text_state " + std::to_string(hp_.n_text_state) + " is not a multiple of n_text_head " +
                       std::to_string(hp_.n_text_head));
  if (hp_.n_vocab < 51864)
    return FormatError("hparam n_vocab = " + std::to_string(hp_.n_vocab) + " is below Whisper's 51864 (specials and timestamps)");

  int32_t n_mel = 0, n_fft = 0;
  ZF_RETURN_IF_ERROR(r.I32("mel filters n_mel", &n_mel));
  ZF_RETURN_IF_ERROR(r.I32("mel filters n_fft", &n_fft));
  if (n_mel != hp_.n_mels)
    return FormatError("mel filters n_mel = " + std::to_string(n_mel) + " differs from hparam n_mels = " + std::to_string(hp_.n_mels));
  if (n_fft != 201) return FormatError("mel filters n_fft = " + std::to_string(n_fft) + " (expected 201 for a 400-point FFT)");
  const uint8_t* p = nullptr;
  ZF_RETURN_IF_ERROR(r.Bytes("mel filters", size_t(n_mel) * n_fft * 4, &p));
  mel_n_fft_ = n_fft;
  mel_filters_.resize(size_t(n_mel) * n_fft);
  std::memcpy(mel_filters_.data(), p, mel_filters_.size() * 4);

  int32_t n_tokens = 0;
  ZF_RETURN_IF_ERROR(r.I32("vocabulary size", &n_tokens));
  if (n_tokens < 0 || n_tokens > hp_.n_vocab)
    return FormatError("vocabulary size " + std::to_string(n_tokens) + " is outside [0, n_vocab = " + std::to_string(hp_.n_vocab) + "]");
  vocab_.resize(size_t(n_tokens));
  for (int32_t i = 0; i < n_tokens; ++i) {
    int32_t len = 0;
    ZF_RETURN_IF_ERROR(r.I32("token length", &len));
    if (len < 0 || len > 1024) return FormatError("token " + std::to_string(i) + " length " + std::to_string(len) + " is outside [0, 1024]");
    ZF_RETURN_IF_ERROR(r.Bytes("token " + std::to_string(i), size_t(len), &p));
    vocab_[size_t(i)].assign(reinterpret_cast<const char*>(p), size_t(len));
  }

  while (!r.done()) {
    int32_t n_dims = 0, name_len = 0, ttype = 0;
    ZF_RETURN_IF_ERROR(r.I32("tensor n_dims", &n_dims));
    ZF_RETURN_IF_ERROR(r.I32("tensor name length", &name_len));
    ZF_RETURN_IF_ERROR(r.I32("tensor type", &ttype));
    if (n_dims < 1 || n_dims > 3) return FormatError("tensor at byte " + std::to_string(r.pos()) + ": n_dims " + std::to_string(n_dims) + " is outside [1, 3]");
    if (name_len < 1 || name_len > 256) return FormatError("tensor at byte " + std::to_string(r.pos()) + ": name length " + std::to_string(name_len) + " is outside [1, 256]");
    WhisperTensor t;
    t.n_dims = n_dims;
    for (int32_t d = 0; d < n_dims; ++d) {
      int32_t ne = 0;
      ZF_RETURN_IF_ERROR(r.I32("tensor dim", &ne));
      if (ne < 1 || ne > kMaxDim) return FormatError("tensor at byte " + std::to_string(r.pos()) + ": dim " + std::to_string(d) + " = " + std::to_string(ne) + " is outside [1, 2^24]");
      t.ne[d] = ne;
    }
    ZF_RETURN_IF_ERROR(r.Bytes("tensor name", size_t(name_len), &p));
    const std::string name(reinterpret_cast<const char*>(p), size_t(name_len));
    const GgmlType type = static_cast<GgmlType>(uint32_t(ttype));
    if (ttype < 0 || !WeightTypeOk(type))
      return FormatError("tensor '" + name + "': type " + std::to_string(ttype) + " is not F32, F16 or Q4_0..Q8_0");
    const GgmlTypeTraits* tr = GetTypeTraits(type);
    if (t.ne[0] % tr->block_size != 0)
      return FormatError("tensor '" + name + "': row length " + std::to_string(t.ne[0]) + " is not a multiple of " + tr->name + "'s block size " + std::to_string(tr->block_size));
    const size_t rows = size_t(t.ne[1]) * size_t(t.ne[2]);
    t.type = type;
    t.nbytes = RowSize(type, t.ne[0]) * rows;
    if (tensors_.count(name)) return FormatError("tensor '" + name + "' appears twice");
    ZF_RETURN_IF_ERROR(r.Bytes("tensor '" + name + "' data", t.nbytes, &t.data));
    tensors_[name] = t;
  }
  return Status::Ok();
}

Status WhisperFile::Get(const std::string& name, std::vector<int64_t> ne, WhisperTensor* out) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return FormatError("tensor '" + name + "' is missing");
  const WhisperTensor& t = it->second;
  ne.resize(3, 1);
  if (t.ne[0] != ne[0] || t.ne[1] != ne[1] || t.ne[2] != ne[2]) {
    return FormatError("tensor '" + name + "' has dims [" + std::to_string(t.ne[0]) + ", " + std::to_string(t.ne[1]) + ", " +
                       std::to_string(t.ne[2]) + "], expected [" + std::to_string(ne[0]) + ", " + std::to_string(ne[1]) + ", " +
                       std::to_string(ne[2]) + "]");
  }
  *out = t;
  return Status::Ok();
}

}  // namespace zf::speech
