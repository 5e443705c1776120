// Constrained decoding over llguidance's C API (third_party/llguidance/include/llguidance.h):
// one LlgTokenizer per model (built on first use from the vocabulary's bytes), one LlgMatcher
// per generation.
#include "runtime/constraint.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

#if ZF_HAVE_CONSTRAINTS
#include "llguidance.h"
#endif

namespace zf::rt {

Status ChoiceRegex(std::string_view json_array, std::string* out) {
  nlohmann::json j = nlohmann::json::parse(json_array.begin(), json_array.end(), nullptr, false);
  if (j.is_discarded()) return InvalidArgument("constraint choice list is not valid JSON (want an array of strings)");
  if (!j.is_array() || j.empty()) return InvalidArgument("constraint choice list must be a non-empty JSON array of strings");
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) {
      return InvalidArgument("constraint choice list: element " + std::to_string(i) + " is not a string");
    }
    if (i > 0) out->push_back('|');
    out->append("(?:");
    for (char c : j[i].get_ref<const std::string&>()) {
      // regex-syntax's escape set; every other byte (UTF-8 included) stands for itself.
      if (std::strchr("\\.+*?()|[]{}^$#&-~", c) != nullptr && c != '\0') out->push_back('\\');
      out->push_back(c);
    }
    out->push_back(')');
  }
  return Status::Ok();
}

#if !ZF_HAVE_CONSTRAINTS

bool ConstraintsAvailable() { return false; }

struct Constraint::Impl {};

Constraint::~Constraint() = default;

Status Constraint::Create(const model::Model&, ConstraintKind, std::string_view, std::unique_ptr<Constraint>* out) {
  out->reset();
  return Unsupported("constrained decoding is not available: libzerfoo was built without constraints "
                     "(llguidance needs cargo at build time; -DZF_CONSTRAINTS)");
}
Status Constraint::ComputeMask() { return Unsupported("built without constraints"); }
Status Constraint::Commit(int32_t) { return Unsupported("built without constraints"); }
Status Constraint::Feed(std::string_view) { return Unsupported("built without constraints"); }
bool Constraint::IsStopped() const { return true; }

#else

bool ConstraintsAvailable() { return true; }

namespace {

// The vocabulary as llguidance sees it, built once per model.
struct LlgVocab {
  LlgTokenizer* tok = nullptr;
  int32_t n_vocab = 0;  // the tokenizer's vocabulary (<= the logits' n_vocab)
  ~LlgVocab() { llg_free_tokenizer(tok); }
};

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

Status BuildVocab(const model::Model& model, std::shared_ptr<LlgVocab>* out) {
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
  auto v = std::make_shared<LlgVocab>();
  v->tok = t;
  v->n_vocab = n;
  *out = std::move(v);
  return Status::Ok();
}

Status GetVocab(const model::Model& model, std::shared_ptr<LlgVocab>* out) {
  model::Model::LazyState& st = model.constraint_state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.value == nullptr) {
    std::shared_ptr<LlgVocab> v;
    ZF_RETURN_IF_ERROR(BuildVocab(model, &v));
    st.value = std::move(v);
  }
  *out = std::static_pointer_cast<LlgVocab>(st.value);
  return Status::Ok();
}

// JSON written as Python's json.dumps writes it (", " and ": ", no other whitespace) unless the
// schema says otherwise in llguidance's "x-guidance" key: with whitespace free between tokens, a
// small model can spend its whole budget on newlines and indentation.
Status CompactJsonSchema(std::string_view text, std::string* out) {
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgument("invalid JSON schema: not JSON");
  if (schema.is_object() && !schema.contains("x-guidance")) {
    schema["x-guidance"] = {{"whitespace_flexible", false}, {"item_separator", ", "}, {"key_separator", ": "}};
  }
  *out = schema.dump();
  return Status::Ok();
}

}  // namespace

struct Constraint::Impl {
  LlgMatcher* m = nullptr;
  ~Impl() { llg_free_matcher(m); }
};

Constraint::~Constraint() = default;

Status Constraint::Create(const model::Model& model, ConstraintKind kind, std::string_view text,
                          std::unique_ptr<Constraint>* out) {
  out->reset();
  const char* type = nullptr;
  std::string data(text);
  switch (kind) {
    case ConstraintKind::kJsonSchema:
      type = "json_schema";
      ZF_RETURN_IF_ERROR(CompactJsonSchema(text, &data));
      break;
    case ConstraintKind::kRegex: type = "regex"; break;
    case ConstraintKind::kLark: type = "lark"; break;
    case ConstraintKind::kChoice:
      type = "regex";
      ZF_RETURN_IF_ERROR(ChoiceRegex(text, &data));
      break;
    default:
      return InvalidArgument("unknown constraint kind " + std::to_string(int32_t(kind)));
  }
  if (data.find('\0') != std::string::npos) return InvalidArgument("constraint text contains a NUL byte");
  std::shared_ptr<LlgVocab> vocab;
  ZF_RETURN_IF_ERROR(GetVocab(model, &vocab));

  LlgConstraintInit init;
  std::memset(&init, 0, sizeof init);
  llg_constraint_init_set_defaults(&init, vocab->tok);
  init.log_stderr_level = 0;  // errors come back as statuses, not on stderr
  init.log_buffer_level = 0;
  init.limits.verbose_errors = false;
  std::unique_ptr<Constraint> c(new Constraint());
  c->impl_.reset(new Impl());
  c->impl_->m = llg_new_matcher(&init, type, data.c_str());
  if (const char* e = llg_matcher_get_error(c->impl_->m)) {
    const char* what = kind == ConstraintKind::kJsonSchema ? "JSON schema"
                       : kind == ConstraintKind::kLark ? "Lark grammar"
                       : kind == ConstraintKind::kChoice ? "choice list"
                                                         : "regular expression";
    return InvalidArgument(std::string("invalid ") + what + ": " + e);
  }
  c->vocab_ = vocab;
  c->n_vocab_ = std::max(vocab->n_vocab, model.desc().n_vocab);
  const size_t llg_words = llg_matcher_get_mask_byte_size(c->impl_->m) / 4;
  c->mask_.assign(std::max(llg_words, (size_t(c->n_vocab_) + 31) / 32), 0u);
  c->n_vocab_ = std::min(c->n_vocab_, vocab->n_vocab);  // ids beyond the tokenizer: never allowed
  *out = std::move(c);
  return Status::Ok();
}

Status Constraint::ComputeMask() {
  const auto t0 = std::chrono::steady_clock::now();
  LlgMatcher* m = impl_->m;
  const size_t bytes = llg_matcher_get_mask_byte_size(m);
  if (llg_matcher_compute_mask_into(m, mask_.data(), bytes) != 0) {
    const char* e = llg_matcher_get_error(m);
    return InternalError(std::string("constraint mask: ") + (e != nullptr ? e : "unknown error"));
  }
  // Bits past the tokenizer's vocabulary (padding of the last word) stay off.
  if (n_vocab_ % 32 != 0) mask_[size_t(n_vocab_) / 32] &= (1u << (n_vocab_ % 32)) - 1u;
  if (std::all_of(mask_.begin(), mask_.end(), [](uint32_t w) { return w == 0; })) {
    return InvalidArgument("constraint: no token of the vocabulary can continue the text (" +
                           std::to_string(n_masks_) + " tokens generated)");
  }
  mask_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++n_masks_;
  return Status::Ok();
}

Status Constraint::Commit(int32_t token) {
  if (!Allowed(token)) return InternalError("constraint: sampled token " + std::to_string(token) + " is not allowed");
  if (llg_matcher_consume_token(impl_->m, uint32_t(token)) != 0) {
    const char* e = llg_matcher_get_error(impl_->m);
    return InternalError(std::string("constraint: ") + (e != nullptr ? e : "unknown error"));
  }
  return Status::Ok();
}

Status Constraint::Feed(std::string_view text) {
  const auto* vocab = static_cast<const LlgVocab*>(vocab_.get());
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  std::vector<uint32_t> ids(llg_tokenize_bytes(vocab->tok, bytes, text.size(), nullptr, 0));
  ids.resize(llg_tokenize_bytes(vocab->tok, bytes, text.size(), ids.data(), ids.size()));
  if (llg_matcher_consume_tokens(impl_->m, ids.data(), ids.size()) != 0 || llg_matcher_is_error(impl_->m)) {
    const char* e = llg_matcher_get_error(impl_->m);
    return InvalidArgument(std::string("constraint: the text from the trigger on does not fit: ") +
                           (e != nullptr ? e : "unknown error"));
  }
  return Status::Ok();
}

bool Constraint::IsStopped() const { return llg_matcher_is_stopped(impl_->m); }

#endif  // ZF_HAVE_CONSTRAINTS

}  // namespace zf::rt
