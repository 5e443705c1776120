// Fill-in-the-middle prompts and POST /infill bodies.
#include "infill_request.h"

#include <algorithm>
#include <cstring>

#include "model_text.h"

namespace cli::serve {

namespace {

struct FimIds {
  int32_t pre = -1, suf = -1, mid = -1, rep = -1, sep = -1;
};

FimIds ModelFim(const zf_model* model) {
  zf_model_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  FimIds f;
  if (zf_model_info(model, &s) != ZF_OK || s.struct_size < sizeof s) return f;
  f = {s.token_fim_pre, s.token_fim_suf, s.token_fim_mid, s.token_fim_rep, s.token_fim_sep};
  if (f.pre < 0 || f.suf < 0 || f.mid < 0) {
    std::string missing;
    for (auto [id, name] : {std::pair{f.pre, "prefix"}, {f.suf, "suffix"}, {f.mid, "middle"}}) {
      if (id < 0) missing += std::string(missing.empty() ? "" : ", ") + name;
    }
    throw BadRequest("unsupported", "this model has no fill-in-the-middle tokens (missing: " + missing + ")");
  }
  return f;
}

// Text tokenized as llama-server tokenizes FIM parts: no BOS, special-token text kept as text.
std::vector<int32_t> Plain(const zf_model* model, const std::string& text, const char* field) {
  if (text.empty()) return {};
  try {
    return Tokenize(model, text, 0);
  } catch (const ApiError& e) {
    throw BadRequest(e.code, std::string("'") + field + "': " + e.message);
  }
}

void Append(std::vector<int32_t>* to, const std::vector<int32_t>& from) { to->insert(to->end(), from.begin(), from.end()); }

// input_prefix / input_suffix: a string, or an array of strings and token ids (llama-server's
// tokenize_mixed).
std::vector<int32_t> Mixed(const json& v, const RequestContext& ctx, const char* field) {
  if (v.is_string()) return Plain(ctx.model, v.get<std::string>(), field);
  if (!v.is_array()) throw BadRequest("invalid_type", std::string("'") + field + "' must be a string or an array of strings and token ids");
  std::vector<int32_t> out;
  for (const json& e : v) {
    if (e.is_string()) {
      Append(&out, Plain(ctx.model, e.get<std::string>(), field));
    } else if (e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() < ctx.n_vocab) {
      out.push_back(int32_t(e.get<int64_t>()));
    } else if (e.is_number_integer() || e.is_number_unsigned()) {
      throw BadRequest("invalid_value", std::string("'") + field + "': token id outside the vocabulary");
    } else {
      throw BadRequest("invalid_type", std::string("'") + field + "' must be a string or an array of strings and token ids");
    }
  }
  return out;
}

}  // namespace

std::vector<int32_t> BuildInfillPrompt(const zf_model* model, const InfillInput& in, int n_ctx, int32_t n_predict) {
  const FimIds f = ModelFim(model);
  // Repository-level context (Qwen2.5-Coder's format): the project, then each file.
  std::vector<int32_t> extra;
  if (f.rep >= 0) {
    extra.push_back(f.rep);
    Append(&extra, Plain(model, "myproject\n", "input_extra"));
  }
  for (const InfillChunk& c : in.extra) {
    if (f.sep >= 0) {
      extra.push_back(f.sep);
      Append(&extra, Plain(model, c.filename + "\n", "input_extra"));
    } else {
      Append(&extra, Plain(model, "\n\n--- snippet ---\n\n", "input_extra"));
    }
    Append(&extra, Plain(model, c.text, "input_extra"));
  }
  if (f.sep >= 0) {
    extra.push_back(f.sep);
    Append(&extra, Plain(model, "filename\n", "input_extra"));
  }
  const std::vector<int32_t> prompt = in.prompt.empty() ? std::vector<int32_t>()
                                                        : Tokenize(model, in.prompt, ZF_TOKENIZE_PARSE_SPECIAL);
  // llama-server's budget: a batch (its default 2048, at most the context) split 3:1 between the
  // prefix's end and the suffix's start; the repository context fills what remains.
  const int64_t n_batch = std::min(n_ctx, 2048);
  const int64_t n_pre = std::min<int64_t>(int64_t(in.prefix.size()), 3 * (n_batch / 4));
  const int64_t n_suf = std::min<int64_t>(int64_t(in.suffix.size()), std::max<int64_t>(0, n_batch / 4 - (2 + int64_t(prompt.size()))));
  const int64_t n_extra = std::min<int64_t>(
      std::max<int64_t>(0, int64_t(n_ctx) - n_batch - 2 * int64_t(std::max<int32_t>(0, n_predict))), int64_t(extra.size()));

  std::vector<int32_t> out = Tokenize(model, "", ZF_TOKENIZE_ADD_SPECIAL);  // BOS, where the model adds it
  out.insert(out.end(), extra.end() - n_extra, extra.end());
  out.push_back(f.pre);
  out.insert(out.end(), in.prefix.end() - n_pre, in.prefix.end());
  Append(&out, prompt);
  out.push_back(f.suf);
  out.insert(out.end(), in.suffix.begin(), in.suffix.begin() + n_suf);
  out.push_back(f.mid);
  return out;
}

Request ParseInfill(const std::string& text, const RequestContext& ctx) {
  json body = ParseObject(text);
  InfillInput in;
  for (const char* key : {"input_prefix", "input_suffix"}) {
    if (!body.contains(key) || body[key].is_null()) throw BadRequest("missing_field", std::string("'") + key + "' is required");
  }
  if (body.contains("prompt") && !body["prompt"].is_null()) {
    if (!body["prompt"].is_string()) throw BadRequest("invalid_type", "'prompt' must be a string");
    in.prompt = body["prompt"].get<std::string>();
  }
  if (body.contains("input_extra") && !body["input_extra"].is_null()) {
    const json& ex = body["input_extra"];
    const char* shape = "'input_extra' must be an array of {\"filename\": string, \"text\": string}";
    if (!ex.is_array()) throw BadRequest("invalid_type", shape);
    for (size_t i = 0; i < ex.size(); ++i) {
      const json& c = ex[i];
      const std::string at = "'input_extra[" + std::to_string(i) + "]";
      if (!c.is_object()) throw BadRequest("invalid_type", shape);
      InfillChunk chunk{"tmp", ""};
      if (c.contains("filename") && !c["filename"].is_null()) {
        if (!c["filename"].is_string()) throw BadRequest("invalid_type", at + ".filename' must be a string");
        chunk.filename = c["filename"].get<std::string>();
      }
      if (c.contains("text") && !c["text"].is_null()) {
        if (!c["text"].is_string()) throw BadRequest("invalid_type", at + ".text' must be a string");
        chunk.text = c["text"].get<std::string>();
      }
      in.extra.push_back(std::move(chunk));
    }
  }
  // The sampling fields are /v1/completions' (n_predict, temperature, stop, stream, ...): its
  // parser checks them on the body with the FIM sequence as a token-id prompt.
  int64_t n_predict = -1;
  if (!GetNumber(body, "max_completion_tokens", &n_predict) && !GetNumber(body, "max_tokens", &n_predict)) {
    GetNumber(body, "n_predict", &n_predict);
  }
  // Checked before tokenizing: a model without FIM tokens is refused however the text looks.
  (void)ModelFim(ctx.model);
  in.prefix = Mixed(body["input_prefix"], ctx, "input_prefix");
  in.suffix = Mixed(body["input_suffix"], ctx, "input_suffix");
  const int32_t np = n_predict > INT32_MAX ? INT32_MAX : int32_t(std::max<int64_t>(-1, n_predict));
  json completion = body;
  for (const char* key : {"input_prefix", "input_suffix", "input_extra", "suffix"}) completion.erase(key);
  completion["prompt"] = BuildInfillPrompt(ctx.model, in, ctx.n_ctx, np);
  return ParseCompletion(completion.dump(), false, ctx);
}

bool CompletionSuffixPrompt(const json& body, const RequestContext& ctx, int32_t max_tokens, std::vector<int32_t>* prompt) {
  auto it = body.find("suffix");
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_string()) throw BadRequest("invalid_type", "'suffix' must be a string");
  if (it->get_ref<const std::string&>().empty()) return false;
  InfillInput in;
  (void)ModelFim(ctx.model);
  const json& p = body.contains("prompt") ? body["prompt"] : json();
  if (p.is_string()) {
    in.prefix = Plain(ctx.model, p.get<std::string>(), "prompt");
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    in.prefix = Plain(ctx.model, p[0].get<std::string>(), "prompt");
  } else {
    throw BadRequest("invalid_type", "'prompt' must be a string when 'suffix' is given (the text before the middle)");
  }
  in.suffix = Plain(ctx.model, it->get<std::string>(), "suffix");
  *prompt = BuildInfillPrompt(ctx.model, in, ctx.n_ctx, max_tokens);
  return true;
}

}  // namespace cli::serve
