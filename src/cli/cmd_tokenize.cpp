// `zerfoo tokenize`: text -> token ids (with pieces under --json).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "json.h"

namespace cli {
namespace {

std::string ReadStdin() {
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) text.append(buf, n);
  return text;
}

zf_status Tokenize(const zf_model* model, const std::string& text, uint32_t flags, std::vector<int32_t>* out) {
  out->resize(text.size() + 8);  // usually enough: a token covers at least one byte, plus BOS/EOS
  size_t n = 0;
  zf_status st = zf_tokenize(model, text.data(), text.size(), flags, out->data(), out->size(), &n);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    out->resize(n);
    st = zf_tokenize(model, text.data(), text.size(), flags, out->data(), out->size(), &n);
  }
  if (st == ZF_OK) out->resize(n);
  return st;
}

}  // namespace

int RunTokenize(const Options& opts) {
  const std::string text = opts.positional[0] == "-" ? ReadStdin() : opts.positional[0];

  // Only the tokenizer is needed: skip the weights.
  ModelPtr model;
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.device = ZF_DEVICE_CPU;
  mp.flags = ZF_MODEL_VOCAB_ONLY;
  zf_model* m = nullptr;
  zf_status st = zf_model_load(opts.model.c_str(), &mp, &m);
  model.reset(m);
  if (st != ZF_OK) return ReportError(st);

  uint32_t flags = 0;
  if (!opts.no_special) flags |= ZF_TOKENIZE_ADD_SPECIAL;
  if (opts.parse_special) flags |= ZF_TOKENIZE_PARSE_SPECIAL;
  std::vector<int32_t> ids;
  st = Tokenize(model.get(), text, flags, &ids);
  if (st != ZF_OK) return ReportError(st);

  if (!opts.json) {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) line += ' ';
      line += std::to_string(ids[i]);
    }
    std::printf("%s\n", line.c_str());
    return kExitOk;
  }
  std::string arr = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece;
    st = FetchString(
        [&](char* buf, size_t cap, size_t* needed) {
          return zf_token_to_piece(model.get(), ids[i], ZF_DETOKENIZE_RENDER_SPECIAL, buf, cap, needed);
        },
        false, &piece);
    if (st != ZF_OK) return ReportError(st);
    if (i > 0) arr += ',';
    arr += json::Object().Int("id", ids[i]).Str("piece", piece).Done();
  }
  arr += "]";
  std::printf("%s\n", arr.c_str());
  return kExitOk;
}

}  // namespace cli
