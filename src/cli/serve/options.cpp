// Parsing `zerfoo serve`'s flags into ServeOptions, and its usage text.
#include "options.h"

#include <fstream>
#include <sstream>

#include "../args.h"

namespace cli::serve {

const char kServeHelp[] =
    "usage: zerfoo serve -m MODEL [options]\n\n"
    "OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions (SSE with\n"
    "\"stream\": true), GET /v1/models, /health, /metrics (Prometheus), POST /tokenize,\n"
    "/detokenize, /apply-template. SIGTERM/SIGINT drain: stop accepting, let running requests\n"
    "finish for --grace seconds, then cancel them, exit 0.\n\n"
    "options:\n"
    "  -m, --model FILE          GGUF model file (required)\n"
    "      --host ADDR           address to listen on (default 127.0.0.1)\n"
    "      --port N              TCP port (default 8080; 0 = any free port, printed on stderr)\n"
    "  -np, --parallel N         sessions (slots) generating at once (default: min(4, CPU cores,\n"
    "                            slots whose full context fits in half the available memory),\n"
    "                            at least 1; they share decode steps (continuous batching)\n"
    "  -c, --ctx-size N          context length per slot (0 = min(training, 4096))\n"
    "  -t, --threads N           CPU threads per session and for the batched steps\n"
    "                            (0 = physical cores)\n"
    "      --no-batch            slots decode one at a time instead of sharing each decode\n"
    "                            step (continuous batching, on by default with -np > 1)\n"
    "      --queue N             requests that may wait for a slot (default 512); beyond that:\n"
    "                            503 with Retry-After\n"
    "      --timeout SECONDS     a connection that stays silent this long while sending a\n"
    "                            request (or reading an answer) is closed (default 15); idle\n"
    "                            keep-alive connections are closed after 5 s\n"
    "      --max-body-mb N       largest request body in MiB (default 16); larger: 413\n"
    "      --max-inputs N        inputs per /v1/embeddings request (default 2048); more: 400\n"
    "      --max-documents N     documents per /v1/rerank request (default 1000); more: 400\n"
    "      --grace SECONDS       drain time on SIGTERM before running requests are cancelled\n"
    "                            (default 30)\n"
    "      --api-key KEY         require 'Authorization: Bearer KEY' on /v1, /tokenize, ...\n"
    "      --alias NAME          model name reported by /v1/models (default: the file name)\n"
    "      --chat-template-file F  Jinja chat template to use instead of the model's (prompts\n"
    "                            and reading tool calls / reasoning back)\n"
    "      --no-cache-prompt     do not reuse a slot's KV cache for the prefix a prompt shares\n"
    "                            with its conversation (on by default, and exact: the answer is\n"
    "                            the one a full prefill gives; a request's \"cache_prompt\"\n"
    "                            overrides)\n"
    "      --prefix-cache-mib N  the model's prefix cache: KV blocks of prompts any slot has\n"
    "                            evaluated, reused by every slot (default 256; -1 = off)\n"
    "      --fast-prefill        prefill with the multi-token kernels: faster, but results\n"
    "                            depend on chunking in the last bits, so prompt caching is off\n"
    "                            unless --cache-prompt is given and the prefix cache is unused\n"
    "      --lookup              speculative decoding by prompt lookup (same answers; faster when\n"
    "                            they repeat the prompt; a slot's drafts are verified inside the\n"
    "                            shared decode steps); a request's \"speculative.n_max\": 0 opts out\n"
    "  -md, --model-draft FILE   speculative decoding with a draft model (a smaller GGUF of the\n"
    "                            same vocabulary; loaded once, a draft session per slot) instead\n"
    "                            of prompt lookup; same answers; as --lookup with shared steps\n"
    "      --draft-max N         tokens drafted per step at most (1..16, default 8 with --lookup\n"
    "                            or -md)\n"
    "      --device DEV          auto, cpu or cuda (default auto)\n"
    "  -v, --verbose             log requests and library INFO messages\n"
    "  -h, --help                show this help\n";

ServeOptions ParseServeArgs(int argc, char** argv, int first) {
  ServeOptions o;
  bool cache_prompt_given = false;
  for (int i = first; i < argc; ++i) {
    std::string name = argv[i], value;
    bool has_inline = false;
    const size_t eq = name.find('=');
    if (name.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    auto val = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) throw UsageError("option '" + name + "' needs a value");
      return argv[++i];
    };
    if (name == "-h" || name == "--help") o.help = true;
    else if (name == "-v" || name == "--verbose") o.verbose = true;
    else if (name == "--cache-prompt") o.cache_prompt = cache_prompt_given = true;
    else if (name == "--no-cache-prompt") o.cache_prompt = false;
    else if (name == "--fast-prefill") o.fast_prefill = true;
    else if (name == "--lookup") o.draft_max = o.draft_max == 0 ? 8 : o.draft_max;
    else if (name == "-md" || name == "--model-draft") {
      o.model_draft = val();
      o.draft_max = o.draft_max == 0 ? 8 : o.draft_max;
    }
    else if (name == "--draft-max") o.draft_max = int(ParseInt(name, val(), 1, ZF_MAX_DRAFT));
    else if (name == "--prefix-cache-mib") o.prefix_cache_mib = int(ParseInt(name, val(), -1, 1 << 20));
    else if (name == "--no-batch") o.batch = false;
    else if (name == "-m" || name == "--model") o.model = val();
    else if (name == "--host") o.host = val();
    else if (name == "--port") o.port = int(ParseInt(name, val(), 0, 65535));
    else if (name == "-np" || name == "--parallel") o.parallel = int(ParseInt(name, val(), 1, 256));
    else if (name == "--timeout") o.timeout = int(ParseInt(name, val(), 1, 86400));
    else if (name == "--max-body-mb") o.max_body = size_t(ParseInt(name, val(), 1, 1 << 14)) << 20;
    else if (name == "--max-inputs") o.max_inputs = int(ParseInt(name, val(), 1, 1 << 20));
    else if (name == "--max-documents") o.max_documents = int(ParseInt(name, val(), 1, 1 << 20));
    else if (name == "-c" || name == "--ctx-size" || name == "--ctx") o.ctx = int(ParseInt(name, val(), 0, 1 << 24));
    else if (name == "-t" || name == "--threads") o.threads = int(ParseInt(name, val(), 0, 1024));
    else if (name == "--queue") o.queue = int(ParseInt(name, val(), 0, 1 << 16));
    else if (name == "--grace") o.grace = int(ParseInt(name, val(), 0, 86400));
    else if (name == "--api-key") o.api_key = val();
    else if (name == "--alias") o.alias = val();
    else if (name == "--chat-template-file") {
      const std::string path = val();
      std::ifstream f(path, std::ios::binary);
      if (!f) throw UsageError("--chat-template-file: cannot read '" + path + "'");
      std::stringstream text;
      text << f.rdbuf();
      o.chat_template = text.str();
      if (o.chat_template.empty()) throw UsageError("--chat-template-file: '" + path + "' is empty");
    }
    else if (name == "--device") {
      const std::string v = val();
      if (v == "auto") o.device = ZF_DEVICE_AUTO;
      else if (v == "cpu") o.device = ZF_DEVICE_CPU;
      else if (v == "cuda") o.device = ZF_DEVICE_CUDA;
      else throw UsageError("--device: expected auto, cpu or cuda, got '" + v + "'");
    } else {
      throw UsageError(name[0] == '-' ? "unknown option '" + name + "'" : "unexpected argument '" + name + "'");
    }
  }
  if (!o.help && o.model.empty()) throw UsageError("missing -m MODEL");
  if (o.fast_prefill && !cache_prompt_given) o.cache_prompt = false;  // reuse would not be exact
  if (o.alias.empty()) {
    std::string base = o.model.substr(o.model.find_last_of('/') + 1);
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
    o.alias = base;
  }
  return o;
}

}  // namespace cli::serve
