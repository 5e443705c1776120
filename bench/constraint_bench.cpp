// Constrained decoding cost (doc/constraints.md): per model, the time to compile constraints
// (the first includes building llguidance's view of the vocabulary), the mask time per token,
// and greedy decode speed free vs constrained. Plain executable (no Google Benchmark):
//   zerfoo_constraint_bench MODEL.gguf [n_threads] [repeats]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/model.h"
#include "runtime/constraint_vocab.h"
#include "runtime/generator.h"
#include "runtime/session.h"

namespace {

const char kSchema[] = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":40},
  "age":{"type":"integer","minimum":0,"maximum":150},
  "email":{"type":"string","format":"email"},
  "roles":{"type":"array","items":{"enum":["admin","user","guest"]},"maxItems":3},
  "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
             "zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street","city","zip"]}},
  "required":["name","age","email","roles","address"],"additionalProperties":false})";

struct Run {
  zf::rt::GenerateResult r;
  std::string text;
};

bool Collect(void* ctx, std::string_view piece, int32_t) {
  static_cast<std::string*>(ctx)->append(piece);
  return false;
}

Run Generate(const zf::rt::ConstraintVocab& vocab, int32_t threads, const std::string& prompt, zf::rt::ConstraintKind kind,
             const std::string& constraint, int32_t max_tokens, bool ignore_eos) {
  zf::rt::SessionOptions so;
  so.n_ctx = 2048;
  so.n_threads = threads;
  std::unique_ptr<zf::rt::Session> s;
  if (!zf::rt::Session::Create(vocab.model(), so, &s).ok()) std::exit(1);
  s->set_constraint_vocab(&vocab);  // built by the first run, kept as a served model keeps it
  zf::rt::GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampler.temperature = 0;
  o.ignore_eos = ignore_eos;
  o.constraint_kind = kind;
  o.constraint = constraint;
  Run run;
  zf::Status st = zf::rt::Generate(*s, prompt, o, Collect, &run.text, &run.r);
  if (!st.ok()) {
    std::fprintf(stderr, "generate: %s\n", st.message().c_str());
    std::exit(1);
  }
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [n_threads] [repeats]\n", argv[0]);
    return 2;
  }
  const int32_t threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 1;
  zf::model::LoadOptions lo;
  lo.n_threads = threads;
  std::unique_ptr<zf::model::Model> m;
  if (zf::Status st = zf::model::Model::Load(argv[1], lo, &m); !st.ok()) {
    std::fprintf(stderr, "load: %s\n", st.message().c_str());
    return 1;
  }
  std::printf("model %s: vocabulary %d tokens\n", argv[1], m->tokenizer().n_vocab());
  const std::string ask = "Invent a customer record as JSON: name, age, email, roles, address.";
  const std::string prompt = m->desc().arch.rfind("gemma", 0) == 0
                                 ? "<start_of_turn>user\n" + ask + "<end_of_turn>\n<start_of_turn>model\n"
                                 : "<|im_start|>user\n" + ask + "<|im_end|>\n<|im_start|>assistant\n";
  const zf::rt::ConstraintVocab vocab(*m);
  for (int rep = 0; rep < repeats; ++rep) {
    const Run json = Generate(vocab, threads, prompt, zf::rt::ConstraintKind::kJsonSchema, kSchema, 256, false);
    const Run rx = Generate(vocab, threads, prompt, zf::rt::ConstraintKind::kRegex,
                            "\\{\"name\": \"[A-Za-z ]{1,30}\", \"age\": [0-9]{1,3}\\}", 256, false);
    const Run free = Generate(vocab, threads, prompt, zf::rt::ConstraintKind::kNone, "", json.r.n_generated, true);
    const auto line = [](const char* what, const Run& r) {
      const double tps = r.r.n_generated / (r.r.decode_ms / 1000.0);
      std::printf("  %-12s %4d tokens  decode %8.1f ms  %7.1f tok/s  compile %7.2f ms  mask %6.3f ms/token (%lld masks)\n",
                  what, r.r.n_generated, r.r.decode_ms, tps, r.r.constraint_compile_ms,
                  r.r.constraint_masks > 0 ? r.r.constraint_mask_ms / double(r.r.constraint_masks) : 0.0,
                  static_cast<long long>(r.r.constraint_masks));
    };
    std::printf("run %d\n", rep + 1);
    line("json schema", json);
    line("regex", rx);
    line("free", free);
    if (rep == 0) std::printf("  json output: %s\n  regex output: %s\n", json.text.c_str(), rx.text.c_str());
  }
  return 0;
}
