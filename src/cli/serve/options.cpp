// `zerfoo serve`'s flags, parsed by the shared option table (../args.cpp), into ServeOptions.
#include "options.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "../args.h"

namespace cli::serve {

std::string ServeHelp() { return CommandHelp("serve"); }

namespace {
// ZERFOO_KV_CACHE_TYPE (Ollama's OLLAMA_KV_CACHE_TYPE): the K and V type unless -ctk / -ctv say.
int KvTypeFromEnv() {
  const char* v = std::getenv("ZERFOO_KV_CACHE_TYPE");
  if (v == nullptr || *v == '\0') return ZF_KV_F16;
  const std::string s = v;
  if (s == "f32") return ZF_KV_F32;
  if (s == "f16") return ZF_KV_F16;
  if (s == "q8_0") return ZF_KV_Q8_0;
  if (s == "q4_0") return ZF_KV_Q4_0;
  throw UsageError("ZERFOO_KV_CACHE_TYPE='" + s + "': expected f32, f16, q8_0 or q4_0");
}
}  // namespace

ServeOptions ParseServeArgs(int argc, char** argv, int first) {
  const ParsedArgs a = ParseCommandLine("serve", argc, argv, first);
  if (!a.positional.empty()) throw UsageError("unexpected argument '" + a.positional[0] + "'");
  ServeOptions o;
  auto num = [&](const char* key, int fallback) { return static_cast<int>(a.Int(key, fallback)); };
  o.help = a.Has("--help");
  o.verbose = a.Has("--verbose");
  // -m PATH[=ALIAS], repeatable: the text after the last '=' names the model unless it looks
  // like a path (has a '/').
  for (const std::string& v : a.Strings("--model")) {
    ModelArg m{v, ""};
    const size_t eq = v.rfind('=');
    if (eq != std::string::npos && eq > 0 && v.find('/', eq) == std::string::npos) {
      m = {v.substr(0, eq), v.substr(eq + 1)};
      if (m.alias.empty()) throw UsageError("-m '" + v + "': the name after '=' is empty");
    }
    o.models.push_back(m);
  }
  if (!o.models.empty()) o.model = o.models[0].path;
  o.models_dir = a.String("--models-dir");
  o.models_preset = a.String("--models-preset");
  o.models_max = num("--models-max", o.models_max);
  if (a.Has("--models-mem")) o.models_mem_gib = a.Float("--models-mem", 0);
  o.sleep_idle = num("--sleep-idle-seconds", o.sleep_idle);
  o.host = a.String("--host", o.host);
  o.port = num("--port", o.port);
  o.parallel = num("--parallel", o.parallel);
  o.ctx = num("--ctx-size", o.ctx);
  o.threads = num("--threads", o.threads);
  o.queue = num("--queue", o.queue);
  o.timeout = num("--timeout", o.timeout);
  if (a.Has("--max-body-mb")) o.max_body = static_cast<size_t>(a.Int("--max-body-mb", 0)) << 20;
  o.max_inputs = num("--max-inputs", o.max_inputs);
  o.max_documents = num("--max-documents", o.max_documents);
  o.grace = num("--grace", o.grace);
  o.device = DeviceOption(a);
  o.api_key = a.String("--api-key");
  o.alias = a.String("--alias");
  o.fast_prefill = a.Has("--fast-prefill");
  o.kv_type = a.Has("--cache-type-k") ? num("--cache-type-k", ZF_KV_F16) : KvTypeFromEnv();
  // The environment sets both, as Ollama's does; -ctk alone sets K (and V unless -ctv says).
  o.kv_type_v = num("--cache-type-v", ZF_KV_SAME);
  // The later of --cache-prompt / --no-cache-prompt wins; --fast-prefill turns reuse off unless
  // --cache-prompt is given, as reuse would not be exact.
  o.cache_prompt = a.LastPosition("--no-cache-prompt") < a.LastPosition("--cache-prompt") ||
                   (!a.Has("--no-cache-prompt") && !o.fast_prefill);
  o.prefix_cache_mib = num("--prefix-cache-mib", o.prefix_cache_mib);
  o.model_draft = a.String("--model-draft");
  o.whisper_models = a.Strings("--whisper-model");
  o.draft_max = DraftMaxOption(a);
  o.n_predict = num("--n-predict", o.n_predict);
  o.lora = a.Strings("--lora");
  o.pooling = num("--pooling", o.pooling);
  if (o.pooling == ZF_POOLING_NONE) {
    throw UsageError("--pooling none (one vector per token) is not supported; use mean, cls, last or rank");
  }
  o.mmproj = a.String("--mmproj");
  o.allow_image_urls = a.Has("--allow-image-urls");
  if (a.Has("--image-max-mb")) o.image_max_bytes = static_cast<size_t>(a.Int("--image-max-mb", 0)) << 20;
  o.image_url_timeout = num("--image-url-timeout", o.image_url_timeout);
  o.batch = !a.Has("--no-batch");
  if (a.Has("--chat-template-file")) {
    const std::string path = a.String("--chat-template-file");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UsageError("--chat-template-file: cannot read '" + path + "'");
    std::stringstream text;
    text << f.rdbuf();
    o.chat_template = text.str();
    if (o.chat_template.empty()) throw UsageError("--chat-template-file: '" + path + "' is empty");
  }
  if (o.help) return o;
  if (o.model.empty() && o.models_dir.empty() && o.models_preset.empty()) {
    throw UsageError("missing -m MODEL (or --models-dir DIR / --models-preset FILE)");
  }
  if (o.model.empty()) return o;
  if (!o.models[0].alias.empty()) o.alias = o.models[0].alias;
  if (o.alias.empty()) {
    std::string base = o.model.substr(o.model.find_last_of('/') + 1);
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
    o.alias = base;
  }
  o.models[0].alias = o.alias;
  return o;
}

int SlotsForCores() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::max(1, std::min(kAutoSlotsMax, cores == 0 ? 1 : int(cores)));
}

}  // namespace cli::serve
