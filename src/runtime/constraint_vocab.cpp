// ConstraintVocab: the tokens' bytes handed to llguidance's tokenizer (llguidance.h), once.
#include "runtime/constraint_vocab.h"

#include <algorithm>
#include <cstring>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

#if ZF_HAVE_CONSTRAINTS
#include "llguidance.h"
#endif

namespace zf::rt {

#if !ZF_HAVE_CONSTRAINTS

ConstraintVocab::Tables::~Tables() = default;

Status ConstraintVocab::Get(std::shared_ptr<const Tables>* out) const {
  out->reset();
  return Unsupported("constrained decoding is not available: libzerfoo was built without constraints");
}

#else

namespace {

// LlgTokenizeFn: plain text to ids, no special tokens (llguidance asks for a tokenization of
// literal bytes). tokenize_assumes_string is set, so the bytes are valid UTF-8.
size_t Tokenize(const void* user_data, const uint8_t* bytes, size_t len, uint32_t* out, size_t cap) {
  const auto* tok = static_cast<const tok::Tokenizer*>(user_data);
  std::vector<int32_t> ids;
  try {
    if (!tok->Encode(std::string_view(reinterpret_cast<const char*>(bytes), len), false, false, &ids).ok()) return 0;
  } catch (...) {
    return 0;
  }
  for (size_t i = 0; i < std::min(cap, ids.size()); ++i) out[i] = uint32_t(ids[i]);
  return ids.size();
}

Status BuildTables(const model::Model& model, std::shared_ptr<const ConstraintVocab::Tables>* out) {
  const tok::Tokenizer& tok = model.tokenizer();
  const int32_t n = tok.n_vocab();
  // Each token's bytes as it appears in text (byte-fallback tokens give their byte, SPM's "▁" a
  // space); a token with no text (control tokens) gets 0xFF + its name, llguidance's mark of a
  // special token, which text can never contain (0xFF is not UTF-8). As llama.cpp does.
  std::vector<uint32_t> lens(static_cast<size_t>(n));
  std::string bytes;
  bytes.reserve(size_t(n) * 8);
  std::vector<LlgToken> eos_extra;
  int32_t eos = tok.eot() >= 0 ? tok.eot() : tok.eos();
  for (int32_t id = 0; id < n; ++id) {
    std::string piece = tok.TokenToPiece(id, false);
    if (piece.empty()) {
      piece = tok.TokenToPiece(id, true);
      if (!piece.empty()) piece.insert(piece.begin(), '\xff');
    }
    lens[size_t(id)] = uint32_t(piece.size());
    bytes += piece;
    if (tok.IsEndOfGeneration(id)) {
      if (eos < 0) eos = id;
      else if (id != eos) eos_extra.push_back(LlgToken(id));
    }
  }
  if (eos < 0) return Unsupported("constrained decoding needs an end-of-generation token; the model has none");
  LlgTokenizerInitV2 init;
  std::memset(&init, 0, sizeof init);
  init.struct_size = sizeof init;
  init.vocab_size = uint32_t(n);
  init.tok_eos = LlgToken(eos);
  init.token_lens = lens.data();
  init.token_bytes = reinterpret_cast<const uint8_t*>(bytes.data());
  init.tokenize_assumes_string = true;
  init.tokenize_fn = Tokenize;
  init.tokenize_user_data = &tok;
  init.tok_eos_extra = eos_extra.empty() ? nullptr : eos_extra.data();
  init.tok_eos_extra_count = uint32_t(eos_extra.size());
  char err[1024] = {0};
  LlgTokenizer* t = llg_new_tokenizer_v2(&init, err, sizeof err);
  if (t == nullptr) return InternalError(std::string("llguidance rejected the vocabulary: ") + err);
  auto v = std::make_shared<ConstraintVocab::Tables>();
  v->tok = t;
  v->n_vocab = n;
  v->offs.resize(size_t(n) + 1);
  for (int32_t id = 0; id < n; ++id) {
    v->offs[size_t(id) + 1] = v->offs[size_t(id)] + lens[size_t(id)];
    const char c0 = lens[size_t(id)] > 0 ? bytes[v->offs[size_t(id)]] : '\xff';
    if (c0 >= '0' && c0 <= '9') v->digit_first.push_back(id);
    if (c0 == ' ' || c0 == '\n' || c0 == '\r' || c0 == '\t') v->space_first.push_back(id);
  }
  v->bytes = std::move(bytes);
  *out = std::move(v);
  return Status::Ok();
}

}  // namespace

ConstraintVocab::Tables::~Tables() {
  if (tok != nullptr) llg_free_tokenizer(tok);
}

Status ConstraintVocab::Get(std::shared_ptr<const Tables>* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (tables_ == nullptr) ZF_RETURN_IF_ERROR(BuildTables(model_, &tables_));
  *out = tables_;
  return Status::Ok();
}

#endif

}  // namespace zf::rt
