// Constrained decoding over llguidance's C API (third_party/llguidance/include/llguidance.h):
// one LlgMatcher per generation, over the model's LlgTokenizer (runtime/constraint_vocab.h).
#include "runtime/constraint.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "model/model.h"
#include "runtime/constraint_vocab.h"
#include "tokenizer/tokenizer.h"

#if ZF_HAVE_CONSTRAINTS
#include "llguidance.h"
#endif

namespace zf::rt {

Status ChoiceRegex(std::string_view json_array, std::string* out) {
  if (JsonNesting(json_array, kMaxJsonNesting) > kMaxJsonNesting) {
    return InvalidArgument("constraint choice list must be a non-empty JSON array of strings (it nests deeper than " +
                           std::to_string(kMaxJsonNesting) + " levels)");
  }
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

Status Constraint::Create(const ConstraintVocab&, ConstraintKind, std::string_view, std::unique_ptr<Constraint>* out) {
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

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// llguidance's compilers recurse: a Lark rule (or terminal) that refers to the next one, or a
// schema $ref to the next $ref, costs a few kB of stack per link (about 5 kB measured), so a chain
// of 3,000 rules overflowed an 8 MB thread. Constraints are therefore compiled on a thread of
// their own with a large stack (reserved, touched only as deep as a compile goes), and a text
// whose structure could go deeper than that stack holds is refused before compiling: every link
// of such a chain needs a ':' (a rule, terminal or JSON key) and every nesting level a bracket,
// so their count bounds the depth. 20,000 of them (a schema of 5,000 properties needs about
// 15,000) need about 100 MB of the 256 MB stack. serde_json (llguidance's JSON parser) refuses
// to nest more than 127 levels; the same bound is checked first so that our own walk over the
// schema (nlohmann's dump) stays shallow too.
constexpr size_t kCompileStackBytes = size_t(256) << 20;
constexpr size_t kMaxConstraintStructure = 20000;
constexpr int kMaxSchemaNesting = 127;

// The ':', '(', '[' and '{' of a schema or grammar text (strings included: conservative).
size_t StructureCount(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += c == ':' || c == '(' || c == '[' || c == '{';
  return n;
}

// Runs fn() on a new thread with a kCompileStackBytes stack and waits for it.
template <class Fn>
Status RunOnLargeStack(Fn& fn) {
  struct Call {
    static void* Run(void* p) {
      (*static_cast<Fn*>(p))();
      return nullptr;
    }
  };
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return Status(Code::kOutOfMemory, "constraint: cannot start the compiler's thread");
  pthread_t th;
  int rc = pthread_attr_setstacksize(&attr, kCompileStackBytes);
  if (rc == 0) rc = pthread_create(&th, &attr, &Call::Run, &fn);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    return Status(Code::kOutOfMemory, "constraint: cannot start the compiler's thread (a " + std::to_string(kCompileStackBytes >> 20) +
                       " MB stack): " + std::strerror(rc));
  }
  pthread_join(th, nullptr);
  return Status::Ok();
}

// JSON written as Python's json.dumps writes it (", " and ": ", no other whitespace) unless the
// schema says otherwise in llguidance's "x-guidance" key: with whitespace free between tokens, a
// small model can spend its whole budget on newlines and indentation. The key is written into
// the text (the schema is parsed only to look at its top level: nlohmann's ordered_json inserts
// in linear time, so parsing into it is quadratic in the number of keys of an object).
Status CompactJsonSchema(std::string_view text, std::string* out) {
  if (JsonNesting(text, kMaxSchemaNesting) > kMaxSchemaNesting) {
    return InvalidArgument("invalid JSON schema: nested deeper than " + std::to_string(kMaxSchemaNesting) +
                           " levels of arrays and objects");
  }
  const nlohmann::json schema = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgument("invalid JSON schema: not JSON");
  out->assign(text.data(), text.size());
  if (schema.is_object() && !schema.contains("x-guidance")) {
    const size_t open = out->find('{');  // the top level's (only whitespace can precede it)
    const size_t next = out->find_first_not_of(" \t\r\n", open + 1);
    const bool empty = next != std::string::npos && (*out)[next] == '}';
    out->insert(open + 1, std::string(R"("x-guidance": {"whitespace_flexible": false, "item_separator": ", ", )") +
                              R"("key_separator": ": "})" + (empty ? "" : ", "));
  }
  return Status::Ok();
}

// llguidance's error text without its "<non-verbose/>" marker (limits.verbose_errors is off).
std::string LlgError(LlgMatcher* m) {
  const char* e = llg_matcher_get_error(m);
  std::string s = e != nullptr ? e : "unknown error";
  const size_t mark = s.find("<non-verbose/>");
  if (mark != std::string::npos) s.erase(mark);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

struct Constraint::Impl {
  LlgMatcher* m = nullptr;
  ~Impl() { llg_free_matcher(m); }
};

Constraint::~Constraint() = default;

Status Constraint::Create(const ConstraintVocab& vocabulary, ConstraintKind kind, std::string_view text,
                          std::unique_ptr<Constraint>* out) {
  out->reset();
  vocabulary.CountCompile();
  const char* what = kind == ConstraintKind::kJsonSchema ? "JSON schema"
                     : kind == ConstraintKind::kLark     ? "Lark grammar"
                     : kind == ConstraintKind::kChoice   ? "choice list"
                                                         : "regular expression";
  const char* type = nullptr;
  std::string data(text);
  switch (kind) {
    case ConstraintKind::kJsonSchema:  // its nesting checked first (the more telling error)
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
  if (kind == ConstraintKind::kJsonSchema || kind == ConstraintKind::kLark) {
    const size_t n = StructureCount(text);
    if (n > kMaxConstraintStructure) {
      return InvalidArgument(std::string("invalid ") + what + ": too large to compile (" + std::to_string(n) +
                             " rules, keys and groups, counted as ':', '(', '[' and '{'; at most " +
                             std::to_string(kMaxConstraintStructure) + ")");
    }
  }
  std::shared_ptr<const ConstraintVocab::Tables> vocab;
  ZF_RETURN_IF_ERROR(vocabulary.Get(&vocab));

  std::unique_ptr<Constraint> c(new Constraint());
  c->impl_.reset(new Impl());
  c->vocab_ = vocab;
  c->n_vocab_ = std::max(vocab->n_vocab, vocabulary.model().desc().n_vocab);
  c->bound_runs_ = kind == ConstraintKind::kJsonSchema ||
                   (kind == ConstraintKind::kLark && text.find("%json") != std::string_view::npos);
  // Compiled, and its first mask computed, on the large stack (see kCompileStackBytes): the
  // first mask builds the lexer's first states, and a grammar that matches no text at all (a
  // rule defined only by itself, a schema that is only {"$ref": "#"}) or that passes
  // llguidance's size limits shows here, as an invalid constraint rather than a failure in the
  // middle of a generation. The mask is kept for the first step.
  Status st;
  auto compile = [&]() {
    LlgConstraintInit init;
    std::memset(&init, 0, sizeof init);
    llg_constraint_init_set_defaults(&init, vocab->tok);
    init.log_stderr_level = 0;  // errors come back as statuses, not on stderr
    init.log_buffer_level = 0;
    init.limits.verbose_errors = false;
    c->impl_->m = llg_new_matcher(&init, type, data.c_str());
    if (llg_matcher_get_error(c->impl_->m) != nullptr) {
      st = InvalidArgument(std::string("invalid ") + what + ": " + LlgError(c->impl_->m));
      return;
    }
    const size_t llg_words = llg_matcher_get_mask_byte_size(c->impl_->m) / 4;
    c->mask_.assign(std::max(llg_words, (size_t(c->n_vocab_) + 31) / 32), 0u);
    c->n_vocab_ = std::min(c->n_vocab_, vocab->n_vocab);  // ids beyond the tokenizer: never allowed
    st = c->ComputeMask();
    if (!st.ok()) st = InvalidArgument(std::string("invalid ") + what + ": " + st.message());
    c->mask_ready_ = st.ok();
  };
  ZF_RETURN_IF_ERROR(RunOnLargeStack(compile));
  ZF_RETURN_IF_ERROR(st);
  *out = std::move(c);
  return Status::Ok();
}

Status Constraint::ComputeMask() {
  if (mask_ready_) {  // computed by Create() for the first step
    mask_ready_ = false;
    return Status::Ok();
  }
  const auto t0 = std::chrono::steady_clock::now();
  LlgMatcher* m = impl_->m;
  const size_t bytes = llg_matcher_get_mask_byte_size(m);
  if (llg_matcher_compute_mask_into(m, mask_.data(), bytes) != 0) {
    // The constraint itself is at fault (llguidance's own failures panic inside and come back
    // the same way, but are not told apart): an empty language, or a size limit of llguidance.
    const std::string why = LlgError(m);
    if (why.find("NoExtensionBias") != std::string::npos) {
      return InvalidArgument(n_masks_ == 0
                                 ? std::string("no text can match it (e.g. a rule defined only by itself, or a "
                                               "schema that is only a $ref to itself)")
                                 : "constraint: no text can complete the output after " + std::to_string(n_masks_) +
                                       " tokens (a part of the grammar that matches nothing)");
    }
    return InvalidArgument(std::string(n_masks_ == 0 ? "" : "constraint: ") + why);
  }
  // Bits past the tokenizer's vocabulary (padding of the last word) stay off.
  if (n_vocab_ % 32 != 0) mask_[size_t(n_vocab_) / 32] &= (1u << (n_vocab_ % 32)) - 1u;
  if (std::all_of(mask_.begin(), mask_.end(), [](uint32_t w) { return w == 0; })) {
    return InvalidArgument("constraint: no token of the vocabulary can continue the text (" +
                           std::to_string(n_masks_) + " tokens generated)");
  }
  if (bound_runs_ && !in_string_) BoundRuns();
  mask_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++n_masks_;
  return Status::Ok();
}

// A JSON schema lets a number have any number of digits and, with whitespace_flexible, any
// amount of whitespace between tokens; a small model under a constraint then writes
// "10.000000..." or newlines until max_tokens. Outside strings, a run of digits is held to
// kMaxDigitRun and a run of whitespace to kMaxSpaceRun: tokens that would make the run longer
// are masked off, unless nothing else is allowed (a schema that needs the digits, e.g. a
// minimum of 10^30). A number then has at most 20 digits before the point, 20 after it and 20
// in the exponent, and the value always ends.
void Constraint::BoundRuns() {
  const auto* vocab = vocab_.get();
  auto cut = [&](const std::vector<int32_t>& first, int run, int max, bool (*is)(char)) {
    if (run == 0) return;
    std::vector<int32_t> removed;
    for (int32_t t : first) {
      if (!Allowed(t)) continue;
      const std::string_view b = vocab->Bytes(t);
      int lead = 0;
      while (size_t(lead) < b.size() && is(b[size_t(lead)])) ++lead;
      if (run + lead <= max) continue;
      mask_[size_t(t) >> 5] &= ~(1u << (t & 31));
      removed.push_back(t);
    }
    if (removed.empty() || !std::all_of(mask_.begin(), mask_.end(), [](uint32_t w) { return w == 0; })) return;
    for (int32_t t : removed) mask_[size_t(t) >> 5] |= 1u << (t & 31);  // nothing else may follow
  };
  cut(vocab->digit_first, digit_run_, kMaxDigitRun, IsDigit);
  cut(vocab->space_first, space_run_, kMaxSpaceRun, IsJsonSpace);
}

void Constraint::Track(std::string_view text) {
  for (char c : text) {
    if (in_string_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
      continue;
    }
    in_string_ = c == '"';
    digit_run_ = IsDigit(c) ? digit_run_ + 1 : 0;
    space_run_ = IsJsonSpace(c) ? space_run_ + 1 : 0;
  }
}

Status Constraint::Commit(int32_t token) {
  mask_ready_ = false;
  if (!Allowed(token)) return InternalError("constraint: sampled token " + std::to_string(token) + " is not allowed");
  if (llg_matcher_consume_token(impl_->m, uint32_t(token)) != 0) {
    // The token was allowed: what fails is the constraint (llguidance's limits, as in ComputeMask).
    return InvalidArgument("constraint: " + LlgError(impl_->m));
  }
  if (bound_runs_) Track(vocab_.get()->Bytes(token));
  return Status::Ok();
}

Status Constraint::Feed(std::string_view text) {
  mask_ready_ = false;
  const auto* vocab = vocab_.get();
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  std::vector<uint32_t> ids(llg_tokenize_bytes(vocab->tok, bytes, text.size(), nullptr, 0));
  ids.resize(llg_tokenize_bytes(vocab->tok, bytes, text.size(), ids.data(), ids.size()));
  if (llg_matcher_consume_tokens(impl_->m, ids.data(), ids.size()) != 0 || llg_matcher_is_error(impl_->m)) {
    return InvalidArgument("constraint: the text from the trigger on does not fit: " + LlgError(impl_->m));
  }
  if (bound_runs_) Track(text);
  return Status::Ok();
}

bool Constraint::IsStopped() const { return llg_matcher_is_stopped(impl_->m); }

#endif  // ZF_HAVE_CONSTRAINTS

}  // namespace zf::rt
