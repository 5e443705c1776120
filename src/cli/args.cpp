// Flag table + parser. One table drives parsing, per-command validity and --help text.
#include "args.h"

#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "zerfoo.h"

namespace cli {
namespace {

enum : unsigned { kGen = 1, kChat = 2, kInfo = 4, kTok = 8, kAll = 15, kSample = kGen | kChat };

using ApplyFn = void (*)(Options&, const std::string& flag, const std::string& value);

struct Flag {
  const char* long_name;
  const char* short_name;  // nullptr when none
  const char* metavar;     // nullptr for boolean flags
  unsigned commands;
  const char* help;
  ApplyFn apply;
};

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

int32_t I32(const std::string& f, const std::string& v, int64_t lo) {
  return static_cast<int32_t>(ParseInt(f, v, lo, kI32Max));
}
float F32(const std::string& f, const std::string& v, double lo, double hi) {
  return static_cast<float>(ParseFloat(f, v, lo, hi));
}

const Flag kFlags[] = {
    {"--model", "-m", "FILE", kAll, "GGUF model file (required)",
     [](Options& o, const std::string&, const std::string& v) { o.model = v; }},
    {"--prompt", "-p", "TEXT", kGen, "prompt text (required)",
     [](Options& o, const std::string&, const std::string& v) { o.prompt = v; }},
    {"--system", nullptr, "TEXT", kChat, "system message that opens the conversation",
     [](Options& o, const std::string&, const std::string& v) { o.system = v; }},
    {"--template", nullptr, "FILE", kChat, "Jinja chat template to use instead of the model's",
     [](Options& o, const std::string&, const std::string& v) { o.template_file = v; }},
    {"--n-predict", "-n", "N", kSample, "tokens to generate at most (-1 = until context is full)",
     [](Options& o, const std::string& f, const std::string& v) { o.n_predict = I32(f, v, -1); }},
    {"--temp", nullptr, "T", kSample, "sampling temperature (0 = greedy)",
     [](Options& o, const std::string& f, const std::string& v) { o.temp = F32(f, v, 0.0, 100.0); }},
    {"--seed", nullptr, "S", kSample, "RNG seed (default: random)",
     [](Options& o, const std::string& f, const std::string& v) { o.seed = ParseU64(f, v); }},
    {"--top-k", nullptr, "K", kSample, "keep the K most likely tokens (0 = off)",
     [](Options& o, const std::string& f, const std::string& v) { o.top_k = I32(f, v, 0); }},
    {"--top-p", nullptr, "P", kSample, "nucleus sampling threshold (1 = off)",
     [](Options& o, const std::string& f, const std::string& v) { o.top_p = F32(f, v, 0.0, 1.0); }},
    {"--min-p", nullptr, "P", kSample, "drop tokens below P * p(max) (0 = off)",
     [](Options& o, const std::string& f, const std::string& v) { o.min_p = F32(f, v, 0.0, 1.0); }},
    {"--repeat-penalty", nullptr, "R", kSample, "penalty for repeated tokens (1 = off)",
     [](Options& o, const std::string& f, const std::string& v) { o.repeat_penalty = F32(f, v, 0.0, 100.0); }},
    {"--repeat-last-n", nullptr, "N", kSample, "window for the repeat penalty",
     [](Options& o, const std::string& f, const std::string& v) { o.repeat_last_n = I32(f, v, 0); }},
    {"--stop", nullptr, "STR", kSample, "stop when STR is generated (repeatable)",
     [](Options& o, const std::string&, const std::string& v) { o.stop.push_back(v); }},
    {"--lookup", nullptr, nullptr, kSample,
     "speculative decoding by prompt lookup (same output; faster when the answer repeats the "
     "prompt); drafts up to --draft-max tokens, 8 unless given",
     [](Options& o, const std::string&, const std::string&) {
       if (o.draft_max == 0) o.draft_max = 8;
     }},
    {"--model-draft", "-md", "FILE", kSample,
     "speculative decoding with a draft model: a smaller GGUF of the same vocabulary drafts "
     "greedily, the model verifies (same output); drafts up to --draft-max tokens, 8 unless given",
     [](Options& o, const std::string&, const std::string& v) {
       o.model_draft = v;
       if (o.draft_max == 0) o.draft_max = 8;
     }},
    {"--draft-max", nullptr, "N", kSample, "tokens drafted per step at most (1..16; turns --lookup on without -md)",
     [](Options& o, const std::string& f, const std::string& v) { o.draft_max = int32_t(ParseInt(f, v, 1, 16)); }},
    {"--draft-min", nullptr, "N", kSample, "no draft when fewer tokens are found (default 1)",
     [](Options& o, const std::string& f, const std::string& v) { o.draft_min = int32_t(ParseInt(f, v, 0, 16)); }},
    {"--threads", "-t", "N", kSample, "CPU threads (0 = physical cores)",
     [](Options& o, const std::string& f, const std::string& v) { o.threads = I32(f, v, 0); }},
    {"--ctx", "-c", "N", kSample, "context length in tokens (0 = min(training, 4096))",
     [](Options& o, const std::string& f, const std::string& v) { o.ctx = I32(f, v, 0); }},
    {"--device", nullptr, "DEV", kGen | kChat | kInfo, "auto, cpu or cuda (default auto)",
     [](Options& o, const std::string& f, const std::string& v) {
       if (v == "auto") o.device = ZF_DEVICE_AUTO;
       else if (v == "cpu") o.device = ZF_DEVICE_CPU;
       else if (v == "cuda") o.device = ZF_DEVICE_CUDA;
       else throw UsageError(f + ": expected auto, cpu or cuda, got '" + v + "'");
     }},
    {"--no-special", nullptr, nullptr, kGen | kTok, "do not add BOS/special tokens to the text",
     [](Options& o, const std::string&, const std::string&) { o.no_special = true; }},
    {"--ignore-eos", nullptr, nullptr, kGen, "keep generating past end-of-generation tokens",
     [](Options& o, const std::string&, const std::string&) { o.ignore_eos = true; }},
    {"--parse-special", nullptr, nullptr, kTok, "match special-token text such as <eos> as tokens",
     [](Options& o, const std::string&, const std::string&) { o.parse_special = true; }},
    {"--json", nullptr, nullptr, kGen | kInfo | kTok, "print one JSON value on stdout",
     [](Options& o, const std::string&, const std::string&) { o.json = true; }},
    {"--verbose", "-v", nullptr, kAll, "log at INFO level (default: warnings only)",
     [](Options& o, const std::string&, const std::string&) { o.verbose = true; }},
    {"--help", "-h", nullptr, kAll, "show this help",
     [](Options& o, const std::string&, const std::string&) { o.help = true; }},
};

unsigned CommandBit(const std::string& c) {
  if (c == "generate") return kGen;
  if (c == "chat") return kChat;
  if (c == "info") return kInfo;
  if (c == "tokenize") return kTok;
  return 0;
}

const Flag* FindFlag(const std::string& name) {
  for (const Flag& f : kFlags) {
    if (name == f.long_name || (f.short_name != nullptr && name == f.short_name)) return &f;
  }
  return nullptr;
}

}  // namespace

bool IsCommand(const std::string& name) { return CommandBit(name) != 0; }

int64_t ParseInt(const std::string& what, const std::string& s, int64_t lo, int64_t hi) {
  // strtoll skips leading blanks; reject them so " 5" is not silently accepted.
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) {
    throw UsageError(what + ": expected an integer, got '" + s + "'");
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') throw UsageError(what + ": expected an integer, got '" + s + "'");
  if (errno == ERANGE || v < lo || v > hi) {
    throw UsageError(what + ": " + s + " is out of range [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  }
  return v;
}

uint64_t ParseU64(const std::string& what, const std::string& s) {
  // strtoull accepts "-1" and wraps it; only plain digits are allowed here.
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) {
    throw UsageError(what + ": expected a non-negative integer, got '" + s + "'");
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end != '\0') throw UsageError(what + ": expected a non-negative integer, got '" + s + "'");
  if (errno == ERANGE) throw UsageError(what + ": " + s + " is out of range");
  return v;
}

double ParseFloat(const std::string& what, const std::string& s, double lo, double hi) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) {
    throw UsageError(what + ": expected a number, got '" + s + "'");
  }
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') throw UsageError(what + ": expected a number, got '" + s + "'");
  // !(lo <= v && v <= hi) also rejects NaN; ERANGE catches overflow/underflow to inf/0.
  if (errno == ERANGE || !std::isfinite(v) || !(lo <= v && v <= hi)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, ": %s is out of range [%g, %g]", s.c_str(), lo, hi);
    throw UsageError(what + buf);
  }
  return v;
}

Options ParseArgs(const std::string& command, int argc, char** argv, int first) {
  const unsigned bit = CommandBit(command);
  Options o;
  o.command = command;
  bool flags_done = false;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {  // "-" alone is a positional (stdin)
      o.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    const size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const Flag* f = FindFlag(name);
    if (f == nullptr) throw UsageError("unknown option '" + name + "'");
    if ((f->commands & bit) == 0) {
      throw UsageError("option '" + name + "' is not valid for '" + command + "'");
    }
    if (f->metavar != nullptr && !inline_value) {
      if (i + 1 >= argc) throw UsageError("option '" + name + "' needs a value");
      value = argv[++i];
    } else if (f->metavar == nullptr && inline_value) {
      throw UsageError("option '" + name + "' takes no value");
    }
    f->apply(o, name, value);
  }
  if (o.help) return o;

  if (o.model.empty()) throw UsageError("missing -m MODEL");
  if (command == "tokenize") {
    if (o.positional.size() != 1) throw UsageError("tokenize takes exactly one TEXT argument ('-' reads stdin)");
  } else if (!o.positional.empty()) {
    throw UsageError("unexpected argument '" + o.positional[0] + "'");
  }
  if (command == "generate" && o.prompt.empty()) throw UsageError("missing -p PROMPT");
  return o;
}

std::string CommandHelp(const std::string& command) {
  std::string s;
  if (command == "generate") {
    s = "usage: zerfoo generate -m MODEL -p PROMPT [options]\n\n"
        "Streams a continuation of PROMPT to stdout; a summary line goes to stderr.\n";
  } else if (command == "chat") {
    s = "usage: zerfoo chat -m MODEL [options]\n\n"
        "Interactive chat using the model's chat template. Ctrl-C stops a reply, Ctrl-D exits.\n";
  } else if (command == "info") {
    s = "usage: zerfoo info -m MODEL [options]\n\nPrints facts about the model and the backends.\n";
  } else {
    s = "usage: zerfoo tokenize -m MODEL [options] TEXT\n\n"
        "Prints the token ids of TEXT ('-' reads stdin).\n";
  }
  s += "\noptions:\n";
  const unsigned bit = CommandBit(command);
  for (const Flag& f : kFlags) {
    if ((f.commands & bit) == 0) continue;
    std::string left = "  ";
    left += f.short_name != nullptr ? std::string(f.short_name) + ", " : "    ";
    left += f.long_name;
    if (f.metavar != nullptr) left += std::string(" ") + f.metavar;
    if (left.size() < 30) left.resize(30, ' ');
    else left += "  ";
    s += left + f.help + "\n";
  }
  return s;
}

}  // namespace cli
