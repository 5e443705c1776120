// `zerfoo info`: model facts from zf_model_info, a few metadata keys, backend availability.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "common.h"
#include "json.h"

namespace cli {
namespace {

const char* kMetaKeys[] = {"general.architecture", "general.name", "tokenizer.ggml.model"};

const char* Str(const char* s) { return s != nullptr ? s : ""; }

const char* DeviceName(int32_t d) {
  return d == ZF_DEVICE_CPU ? "cpu" : d == ZF_DEVICE_CUDA ? "cuda" : "auto";
}

struct Backend {
  const char* name;
  bool available;
  std::string reason;  // why not, when unavailable
};

std::vector<Backend> ProbeBackends() {
  std::vector<Backend> out;
  for (int32_t d : {ZF_DEVICE_CPU, ZF_DEVICE_CUDA}) {
    const zf_status st = zf_backend_available(d);
    out.push_back({DeviceName(d), st == ZF_OK, st == ZF_OK ? "" : zf_last_error()});
  }
  return out;
}

// (key, value) for each metadata key present in the file.
std::vector<std::pair<std::string, std::string>> ReadMeta(const zf_model* model) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* key : kMetaKeys) {
    std::string value;
    const zf_status st = FetchString(
        [&](char* buf, size_t cap, size_t* needed) { return zf_model_meta(model, key, buf, cap, needed); }, true,
        &value);
    if (st == ZF_OK) out.emplace_back(key, value);
  }
  return out;
}

// The architectures this library runs (zf_architectures), comma-separated.
std::string SupportedArchitectures() {
  std::string list;
  FetchString([](char* buf, size_t cap, size_t* needed) { return zf_architectures(buf, cap, needed); }, true, &list);
  return list;
}

void PrintJson(const Options& opts, const zf_model_summary& s,
               const std::vector<std::pair<std::string, std::string>>& meta, const std::vector<Backend>& backends) {
  json::Object m;
  for (const auto& kv : meta) m.Str(kv.first.c_str(), kv.second);
  json::Object b;
  for (const Backend& be : backends) {
    json::Object one;
    one.Bool("available", be.available);
    if (!be.available) one.Str("reason", be.reason);
    b.Raw(be.name, one.Done());
  }
  const std::string obj = json::Object()
                              .Str("path", opts.model)
                              .Str("architecture", Str(s.architecture))
                              .Str("name", Str(s.name))
                              .Str("quant", Str(s.quant))
                              .Int("n_params", static_cast<long long>(s.n_params))
                              .Int("file_size", static_cast<long long>(s.file_size))
                              .Int("n_ctx_train", s.n_ctx_train)
                              .Int("n_vocab", s.n_vocab)
                              .Int("n_layer", s.n_layer)
                              .Int("n_embd", s.n_embd)
                              .Int("n_head", s.n_head)
                              .Int("n_head_kv", s.n_head_kv)
                              .Int("token_bos", s.token_bos)
                              .Int("token_eos", s.token_eos)
                              .Int("token_eot", s.token_eot)
                              .Int("token_fim_pre", s.token_fim_pre)
                              .Int("token_fim_suf", s.token_fim_suf)
                              .Int("token_fim_mid", s.token_fim_mid)
                              .Int("token_fim_pad", s.token_fim_pad)
                              .Int("token_fim_rep", s.token_fim_rep)
                              .Int("token_fim_sep", s.token_fim_sep)
                              .Int("n_tensors", s.n_tensors)
                              .Str("backend", DeviceName(s.backend))
                              .Raw("metadata", m.Done())
                              .Raw("backends", b.Done())
                              .Str("supported_architectures", SupportedArchitectures())
                              .Done();
  std::printf("%s\n", obj.c_str());
}

void PrintText(const Options& opts, const zf_model_summary& s,
               const std::vector<std::pair<std::string, std::string>>& meta, const std::vector<Backend>& backends) {
  std::printf("file:          %s (%.1f MiB)\n", opts.model.c_str(), static_cast<double>(s.file_size) / (1 << 20));
  std::printf("architecture:  %s\n", Str(s.architecture));
  std::printf("name:          %s\n", Str(s.name));
  std::printf("parameters:    %.1fM\n", static_cast<double>(s.n_params) / 1e6);
  std::printf("quantization:  %s\n", Str(s.quant));
  std::printf("tensors:       %d\n", static_cast<int>(s.n_tensors));
  std::printf("vocab:         %d\n", static_cast<int>(s.n_vocab));
  std::printf("context:       %d (training)\n", static_cast<int>(s.n_ctx_train));
  std::printf("layers:        %d\n", static_cast<int>(s.n_layer));
  std::printf("embedding:     %d\n", static_cast<int>(s.n_embd));
  std::printf("heads:         %d (kv %d)\n", static_cast<int>(s.n_head), static_cast<int>(s.n_head_kv));
  std::printf("tokens:        bos %d, eos %d, eot %d\n", static_cast<int>(s.token_bos),
              static_cast<int>(s.token_eos), static_cast<int>(s.token_eot));
  // Fill-in-the-middle (serve's /infill and suffix need pre, suf and mid).
  std::printf("fim tokens:    pre %d, suf %d, mid %d, pad %d, rep %d, sep %d\n", static_cast<int>(s.token_fim_pre),
              static_cast<int>(s.token_fim_suf), static_cast<int>(s.token_fim_mid), static_cast<int>(s.token_fim_pad),
              static_cast<int>(s.token_fim_rep), static_cast<int>(s.token_fim_sep));
  std::printf("backend:       %s\n", DeviceName(s.backend));
  std::printf("metadata:\n");
  for (const auto& kv : meta) std::printf("  %-22s %s\n", kv.first.c_str(), kv.second.c_str());
  std::printf("supported:     %s\n", SupportedArchitectures().c_str());
  std::printf("backends:\n");
  for (const Backend& be : backends) {
    std::printf("  %-22s %s%s%s\n", be.name, be.available ? "available" : "unavailable",
                be.reason.empty() ? "" : ": ", be.reason.c_str());
  }
}

}  // namespace

int RunInfo(const Options& opts) {
  ModelPtr model;
  zf_status st = LoadModel(opts, &model);
  if (st != ZF_OK) return ReportError(st);
  zf_model_summary s{};
  s.struct_size = sizeof s;
  st = zf_model_info(model.get(), &s);
  if (st != ZF_OK) return ReportError(st);

  const auto meta = ReadMeta(model.get());
  const auto backends = ProbeBackends();
  if (opts.json) {
    PrintJson(opts, s, meta, backends);
  } else {
    PrintText(opts, s, meta, backends);
  }
  return kExitOk;
}

}  // namespace cli
