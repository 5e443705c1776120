// The option table of every zerfoo command, and the parser and --help text it drives.
#include "args.h"
#include "model_files.h"

#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "zerfoo.h"

namespace cli {
namespace {

enum : unsigned {
  kGen = 1, kChat = 2, kInfo = 4, kTok = 8, kBench = 16, kServe = 32, kTrans = 64,
  kSample = kGen | kChat,
  kModelCommands = kGen | kChat | kInfo | kTok,
  kLoadsModel = kGen | kChat | kInfo | kBench | kServe,  // what takes --device
};

struct Choice {
  const char* word;
  int64_t value;
};
constexpr Choice kDevices[] = {{"auto", ZF_DEVICE_AUTO}, {"cpu", ZF_DEVICE_CPU}, {"cuda", ZF_DEVICE_CUDA}, {nullptr, 0}};
constexpr Choice kBenchOutputs[] = {{"md", 0}, {"json", 1}, {nullptr, 0}};
// zerfoo transcribe -of (whisper-cli's output formats).
constexpr Choice kTranscriptFormats[] = {{"txt", 0}, {"srt", 1}, {"vtt", 2}, {"json", 3}, {nullptr, 0}};
constexpr Choice kReasoningShown[] = {{"show", 1}, {"hide", 0}, {nullptr, 0}};
// llama-server's --pooling words; "none" (a vector per token) is refused by the server.
constexpr Choice kPoolings[] = {{"none", ZF_POOLING_NONE}, {"mean", ZF_POOLING_MEAN}, {"cls", ZF_POOLING_CLS},
                                {"last", ZF_POOLING_LAST}, {"rank", ZF_POOLING_RANK}, {nullptr, 0}};

// llama.cpp's -ctk / -ctv words (ZF_KV_*).
constexpr Choice kKvTypes[] = {{"f32", ZF_KV_F32}, {"f16", ZF_KV_F16}, {"q8_0", ZF_KV_Q8_0}, {"q4_0", ZF_KV_Q4_0}, {nullptr, 0}};

struct OptionSpec {
  const char* names[4];  // the canonical name first (the ParsedArgs key), then its aliases
  unsigned commands;
  ValueKind kind;
  const char* metavar;  // nullptr for flags
  double lo, hi;        // kInt, kFloat, kIntList: the range values must lie in
  const Choice* choices;  // kChoice: ends with {nullptr, 0}
  const char* help;
  const char* serve_note = nullptr;  // what the option means in addition for `serve`
};

constexpr double kI32Max = std::numeric_limits<int32_t>::max();
constexpr double kListMax = 1 << 20;
constexpr ValueKind kFlag = ValueKind::kFlag, kInt = ValueKind::kInt, kFloat = ValueKind::kFloat,
                    kUInt = ValueKind::kUInt, kString = ValueKind::kString, kChoice = ValueKind::kChoice,
                    kIntList = ValueKind::kIntList;

// The order here is the order of --help. An option's names must be unique within each command.
const OptionSpec kOptions[] = {
    {{"--model", "-m"}, kModelCommands | kBench | kServe, kString, "FILE", 0, 0, nullptr,
     "GGUF model file (required)",
     "serve: repeatable, FILE[=NAME]; the first is the default model, loaded at start, the others on "
     "their first request"},
    {{"--prompt", "-p"}, kGen, kString, "TEXT", 0, 0, nullptr, "prompt text (required)"},
    {{"--system"}, kChat, kString, "TEXT", 0, 0, nullptr, "system message that opens the conversation"},
    {{"--reasoning"}, kChat, kChoice, "show|hide", 0, 0, kReasoningShown,
     "the model's reasoning (thinking) text: shown apart from the answer (dimmed on a terminal, "
     "else between [reasoning] lines; default) or hidden"},
    {{"--chat-template-file", "--template"}, kChat | kServe, kString, "FILE", 0, 0, nullptr,
     "Jinja chat template to use instead of the model's",
     "for prompts and for reading tool calls / reasoning back"},

    // Images (a vision projector beside the model).
    {{"--mmproj"}, kGen | kChat | kServe, kString, "FILE", 0, 0, nullptr,
     "vision projector (llama.cpp's mmproj GGUF) of the model: lets prompts hold images",
     "the -m model's (for --models-dir: an mmproj*.gguf in a model's folder, or mmproj-NAME.gguf "
     "beside NAME.gguf; a preset's mmproj=); /props and /v1/models then report vision"},
    {{"--image"}, kGen | kChat, kString, "FILE", 0, 0, nullptr,
     "an image (PNG, JPEG, GIF, BMP) for the prompt, repeatable; needs --mmproj (or mmproj-NAME.gguf beside "
     "NAME.gguf, or one mmproj*.gguf in the model's folder). generate: at each "
     "<__media__> in -p in order, else all before the prompt text; chat: part of the first message"},
    {{"--audio"}, kGen | kChat, kString, "FILE", 0, 0, nullptr,
     "an audio clip (WAV, MP3, FLAC, Ogg Vorbis) for the prompt, repeatable; needs an audio projector "
     "(--mmproj, found beside the model as for --image). With --image, markers take the files in "
     "command-line order"},
    {{"--allow-image-urls"}, kServe, kFlag, nullptr, 0, 0, nullptr,
     "fetch http(s) image URLs of image_url parts (off: only data: URLs and base64 are taken)"},
    {{"--image-max-mb"}, kServe, kInt, "N", 1, 1 << 10, nullptr,
     "largest image in MiB (decoded; default 20); larger: 413"},
    {{"--image-url-timeout"}, kServe, kInt, "SECONDS", 1, 3600, nullptr,
     "with --allow-image-urls: give up fetching an image after this long without progress (default 10)"},

    // Sampling.
    {{"--n-predict", "-n"}, kSample | kServe, kInt, "N", -1, kI32Max, nullptr,
     "tokens to generate at most (-1 = until context is full)",
     "serve: the default of a request that sets no limit and the most any request gets, on every API "
     "(as llama-server's -n; agents such as Codex send no limit)"},
    {{"--temp"}, kSample, kFloat, "T", 0, 100, nullptr, "sampling temperature (0 = greedy)"},
    {{"--seed"}, kSample, kUInt, "S", 0, 0, nullptr, "RNG seed (default: random)"},
    {{"--top-k"}, kSample, kInt, "K", 0, kI32Max, nullptr, "keep the K most likely tokens (0 = off)"},
    {{"--top-p"}, kSample, kFloat, "P", 0, 1, nullptr, "nucleus sampling threshold (1 = off)"},
    {{"--min-p"}, kSample, kFloat, "P", 0, 1, nullptr, "drop tokens below P * p(max) (0 = off)"},
    {{"--repeat-penalty"}, kSample, kFloat, "R", 0, 100, nullptr, "penalty for repeated tokens (1 = off)"},
    {{"--repeat-last-n"}, kSample, kInt, "N", 0, kI32Max, nullptr, "window for the repeat penalty"},
    {{"--stop"}, kSample, kString, "STR", 0, 0, nullptr, "stop when STR is generated (repeatable)"},

    // Server.
    {{"--host"}, kServe, kString, "ADDR", 0, 0, nullptr, "address to listen on (default 127.0.0.1)"},
    {{"--port"}, kServe, kInt, "N", 0, 65535, nullptr,
     "TCP port (default 8080; 0 = any free port, printed on stderr)"},
    {{"--parallel", "-np"}, kServe, kInt, "N", 1, 256, nullptr,
     "sessions (slots) generating at once (default: min(4, CPU cores, slots whose full context "
     "fits in half the available memory), at least 1; they share decode steps (continuous "
     "batching)"},

    // Shared by the commands that run a model.
    {{"--ctx-size", "-c", "--ctx"}, kSample | kServe, kInt, "N", 0, 1 << 24, nullptr,
     "context length in tokens (0 = min(training, 4096))", "per slot"},
    {{"--threads", "-t"}, kSample | kServe, kInt, "N", 0, 1024, nullptr,
     "CPU threads (0 = physical cores)", "per session and for the batched steps"},

    {{"--no-batch"}, kServe, kFlag, nullptr, 0, 0, nullptr,
     "slots decode one at a time instead of sharing each decode step (continuous batching, on "
     "by default with -np > 1)"},
    {{"--queue"}, kServe, kInt, "N", 0, 1 << 16, nullptr,
     "requests that may wait for a slot (default 512); beyond that: 503 with Retry-After"},
    {{"--timeout"}, kServe, kInt, "SECONDS", 1, 86400, nullptr,
     "a connection that stays silent this long while sending a request (or reading an answer) "
     "is closed (default 15); idle keep-alive connections are closed after 5 s"},
    {{"--max-body-mb"}, kServe, kInt, "N", 1, 1 << 14, nullptr,
     "largest request body in MiB (default 16); larger: 413"},
    {{"--max-inputs"}, kServe, kInt, "N", 1, 1 << 20, nullptr,
     "inputs per /v1/embeddings request (default 2048); more: 400"},
    {{"--max-documents"}, kServe, kInt, "N", 1, 1 << 20, nullptr,
     "documents per /v1/rerank request (default 1000); more: 400"},
    {{"--grace"}, kServe, kInt, "SECONDS", 0, 86400, nullptr,
     "drain time on SIGTERM before running requests are cancelled (default 30)"},
    {{"--api-key"}, kServe, kString, "KEY", 0, 0, nullptr,
     "require 'Authorization: Bearer KEY' on /v1, /tokenize, ..."},
    {{"--alias"}, kServe, kString, "NAME", 0, 0, nullptr,
     "model name reported by /v1/models (default: the file name)"},
    {{"--models-dir"}, kServe, kString, "DIR", 0, 0, nullptr,
     "serve every *.gguf in DIR too, named by its file name without .gguf (split files "
     "NAME-00001-of-0000N.gguf as NAME; a subfolder holding one model as the folder's name); "
     "loaded on demand"},
    {{"--lora"}, kServe, kString, "FILE[:SCALE]", 0, 0, nullptr,
     "a LoRA adapter (GGUF) of the model, applied at SCALE (default 1; 0 loads it unapplied); "
     "repeatable; GET/POST /lora-adapters and a request's \"lora\": [{\"id\", \"scale\"}] change the scales"},
    {{"--pooling"}, kServe, kChoice, "mean|cls|last|rank", 0, 0, kPoolings,
     "how /v1/embeddings pools an input's token states (default: the file's pooling_type; last "
     "token for a generative model)"},
    {{"--models-preset"}, kServe, kString, "FILE", 0, 0, nullptr,
     "INI file of models: [NAME] sections with path=, and optionally ctx-size=, parallel=, "
     "threads=, n-predict=, pooling=, chat-template-file=, model-draft=, lora= (doc/serve.md)"},
    {{"--models-max"}, kServe, kInt, "N", 0, 1 << 16, nullptr,
     "models loaded at once (default 4, as llama-server; 0 = no limit); beyond it the least "
     "recently used idle model is unloaded"},
    {{"--models-mem"}, kServe, kFloat, "GIB", 0, 1 << 20, nullptr,
     "memory budget of the loaded models (file sizes + KV of their slots; default: the "
     "memory available at start); beyond it idle models are unloaded"},
    {{"--sleep-idle-seconds"}, kServe, kInt, "N", 0, kI32Max, nullptr,
     "unload a model no request has used for N seconds (default 0: never); the next request "
     "loads it again"},
    {{"--no-cache-prompt"}, kServe, kFlag, nullptr, 0, 0, nullptr,
     "do not reuse a slot's KV cache for the prefix a prompt shares with its conversation (on by "
     "default, and exact: the answer is the one a full prefill gives; a request's "
     "\"cache_prompt\" overrides)"},
    {{"--cache-prompt"}, kServe, kFlag, nullptr, 0, 0, nullptr,
     "reuse slots' KV caches even with --fast-prefill"},
    {{"--prefix-cache-mib"}, kServe, kInt, "N", -1, 1 << 20, nullptr,
     "the model's prefix cache: KV blocks of prompts any slot has evaluated, reused by every "
     "slot (default 256; -1 = off)"},
    {{"--fast-prefill"}, kServe, kFlag, nullptr, 0, 0, nullptr,
     "prefill with the multi-token kernels: faster, but results depend on chunking in the last "
     "bits, so prompt caching is off unless --cache-prompt is given and the prefix cache is "
     "unused"},

    // Speculative decoding.
    {{"--lookup"}, kSample | kServe, kFlag, nullptr, 0, 0, nullptr,
     "speculative decoding by prompt lookup (same output; faster when the answer repeats the "
     "prompt); drafts up to --draft-max tokens, 8 unless given",
     "a slot's drafts are verified inside the shared decode steps; a request's "
     "\"speculative.n_max\": 0 opts out"},
    {{"--whisper-model"}, kServe, kString, "FILE[=NAME]", 0, 0, nullptr,
     "a Whisper model (whisper.cpp ggml .bin; repeatable, named by NAME or the file's stem, the request's "
     "'model' picks one, whisper-1 the first; --models-dir's .bin files are added) for POST "
     "/v1/audio/transcriptions and /translations "
     "(audio files up to 25 MB; the body limit is raised to 26 MiB)"},
    {{"--model-draft", "-md"}, kSample | kServe, kString, "FILE", 0, 0, nullptr,
     "speculative decoding with a draft model: a smaller GGUF of the same vocabulary drafts "
     "greedily, the model verifies (same output); drafts up to --draft-max tokens, 8 unless "
     "given", "loaded once, a draft session per slot"},
    {{"--draft-max"}, kSample | kServe, kInt, "N", 1, ZF_MAX_DRAFT, nullptr,
     "tokens drafted per step at most (1..16; turns --lookup on without -md)"},
    {{"--draft-min"}, kSample, kInt, "N", 0, ZF_MAX_DRAFT, nullptr,
     "no draft when fewer tokens are found (default 1)"},

    // bench: llama-bench's flags, lists comma-separated.
    {{"--threads", "-t"}, kBench, kIntList, "LIST", 1, kListMax, nullptr,
     "CPU threads (default: all hardware threads)"},
    {{"--n-prompt", "-p"}, kBench, kIntList, "LIST", 0, kListMax, nullptr, "prompt sizes (default 512; 0 skips)"},
    {{"--n-gen", "-n"}, kBench, kIntList, "LIST", 0, kListMax, nullptr, "generation lengths (default 128; 0 skips)"},
    {{"--n-depth", "-d"}, kBench, kIntList, "LIST", 0, kListMax, nullptr,
     "tokens already in the context when a test runs (default 0), as llama-bench's -d: ppN @ dD, tgN @ dD"},
    {{"--repetitions", "-r"}, kBench, kInt, "N", 1, 1000, nullptr, "repetitions per test (default 5)"},
    {{"--output", "-o"}, kBench, kChoice, "FMT", 0, 0, kBenchOutputs, "md or json (default md)"},
    {{"--mmap", "-mmp"}, kBench, kInt, "0|1", 0, 1, nullptr,
     "memory-map the file (1, default) or read it into memory (0)"},
    {{"--fast-prefill", "-fp"}, kBench, kInt, "0|1", 0, 1, nullptr,
     "prefill with the multi-token kernels (1) or exactly, each row as a one-token step (0, "
     "default: what sessions do by default)"},

    // transcribe: speech to text with a Whisper model (whisper-cli's flags where it has them).
    {{"--model", "-m"}, kTrans, kString, "FILE", 0, 0, nullptr, "whisper.cpp ggml .bin model (required)"},
    {{"--language", "-l"}, kTrans, kString, "LANG", 0, 0, nullptr,
     "spoken language: a Whisper code (en, de, ...) or auto (multilingual models; default en)"},
    {{"--translate", "-tr"}, kTrans, kFlag, nullptr, 0, 0, nullptr, "translate into English (multilingual models)"},
    {{"--no-timestamps", "-nt"}, kTrans, kFlag, nullptr, 0, 0, nullptr,
     "decode without timestamps (one segment per 30 s window)"},
    {{"--output-format", "-of"}, kTrans, kChoice, "FMT", 0, 0, kTranscriptFormats,
     "txt (default), srt, vtt or json (segments with times and token probabilities), on stdout"},
    {{"--threads", "-t"}, kTrans, kInt, "N", 0, 1024, nullptr, "CPU threads (0 = hardware threads, at most 8)"},
    {{"--prompt"}, kTrans, kString, "TEXT", 0, 0, nullptr,
     "initial prompt: text the first window is conditioned on (names, spelling, style)"},
    {{"--carry-initial-prompt"}, kTrans, kFlag, nullptr, 0, 0, nullptr, "keep --prompt in front of every window's prompt"},
    {{"--temperature", "-tp"}, kTrans, kFloat, "T", 0, 1, nullptr,
     "first decoding temperature (default 0: greedy, or beam search with -bs)"},
    {{"--temperature-inc", "-tpi"}, kTrans, kFloat, "T", 0, 1, nullptr,
     "fallback step: a window that repeats itself or scores too low is decoded again this much hotter, "
     "up to 1 (default 0.2)"},
    {{"--no-fallback", "-nf"}, kTrans, kFlag, nullptr, 0, 0, nullptr, "no temperature fallback (-tpi 0)"},
    {{"--beam-size", "-bs"}, kTrans, kInt, "N", 0, 8, nullptr, "beam search with N beams (default 1: greedy; whisper-cli's is 5)"},
    {{"--best-of", "-bo"}, kTrans, kInt, "N", 1, 8, nullptr, "sequences sampled per window above temperature 0 (default 5)"},
    {{"--seed"}, kTrans, kUInt, "S", 0, 0, nullptr, "sampling seed (default 0: the same transcript every run)"},
    {{"--max-context", "-mc"}, kTrans, kInt, "N", 0, kI32Max, nullptr,
     "previous-text tokens offered to the next window (default: all the model takes; 0: none)"},
    {{"--word-timestamps", "-wt"}, kTrans, kFlag, nullptr, 0, 0, nullptr,
     "token-level timestamps: -of json gains \"words\" with their times and probabilities"},

    {{"--cache-type-k", "-ctk"}, kGen | kChat | kBench | kServe, kChoice, "TYPE", 0, 0, kKvTypes,
     "K cache element type: f32, f16 (default), q8_0 or q4_0 (quantized: CPU engine, head sizes a multiple of 32)",
     "serve: default from ZERFOO_KV_CACHE_TYPE (K and V, as Ollama's OLLAMA_KV_CACHE_TYPE)"},
    {{"--cache-type-v", "-ctv"}, kGen | kChat | kBench | kServe, kChoice, "TYPE", 0, 0, kKvTypes,
     "V cache element type (default: the K cache's type)"},
    {{"--device", "-dev"}, kLoadsModel, kChoice, "DEV", 0, 0, kDevices, "auto, cpu or cuda (default auto)"},
    {{"--no-special"}, kGen | kTok, kFlag, nullptr, 0, 0, nullptr, "do not add BOS/special tokens to the text"},
    {{"--ignore-eos"}, kGen, kFlag, nullptr, 0, 0, nullptr, "keep generating past end-of-generation tokens"},
    {{"--parse-special"}, kTok, kFlag, nullptr, 0, 0, nullptr, "match special-token text such as <eos> as tokens"},
    {{"--json"}, kGen | kChat | kInfo | kTok, kFlag, nullptr, 0, 0, nullptr,
     "print one JSON value on stdout (chat: one line per turn, the assistant message and usage)"},
    {{"--verbose", "-v"}, kModelCommands | kServe | kTrans, kFlag, nullptr, 0, 0, nullptr,
     "log at INFO level (default: warnings only)", "requests are logged too"},
    {{"--help", "-h"}, kModelCommands | kBench | kServe | kTrans, kFlag, nullptr, 0, 0, nullptr, "show this help"},
};

unsigned CommandBit(const std::string& c) {
  if (c == "generate") return kGen;
  if (c == "chat") return kChat;
  if (c == "info") return kInfo;
  if (c == "tokenize") return kTok;
  if (c == "bench") return kBench;
  if (c == "serve") return kServe;
  if (c == "transcribe") return kTrans;
  return 0;
}

bool Named(const OptionSpec& o, const std::string& name) {
  for (const char* n : o.names) {
    if (n != nullptr && name == n) return true;
  }
  return false;
}

// The option `name` means for `command`; throws when it means nothing there.
const OptionSpec& FindOption(const std::string& name, unsigned bit, const std::string& command) {
  bool elsewhere = false;
  for (const OptionSpec& o : kOptions) {
    if (!Named(o, name)) continue;
    if ((o.commands & bit) != 0) return o;
    elsewhere = true;
  }
  if (elsewhere) throw UsageError("option '" + name + "' is not valid for '" + command + "'");
  throw UsageError("unknown option '" + name + "'");
}

std::string ChoiceList(const Choice* c) {
  std::string s;
  for (const Choice* p = c; p->word != nullptr; ++p) {
    if (p != c) s += (p + 1)->word == nullptr ? " or " : ", ";
    s += p->word;
  }
  return s;
}

int64_t ParseChoice(const std::string& what, const std::string& v, const Choice* c) {
  for (const Choice* p = c; p->word != nullptr; ++p) {
    if (v == p->word) return p->value;
  }
  throw UsageError(what + ": expected " + ChoiceList(c) + ", got '" + v + "'");
}

std::vector<int64_t> ParseIntList(const std::string& what, const std::string& v, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    out.push_back(ParseInt(what, v.substr(start, comma - start), lo, hi));
    start = comma + 1;
  }
  return out;
}

// Appends `text` to `out`, wrapped to `width` columns, continuation lines indented by `indent`.
void AppendWrapped(std::string* out, size_t column, const std::string& text, size_t indent, size_t width) {
  if (column + 24 > width) {  // a long name column: the text starts on the next line
    *out += "\n" + std::string(indent, ' ');
    column = indent;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.size();
    if (column + (end - pos) > width) {
      end = text.rfind(' ', pos + (width - column));
      if (end == std::string::npos || end <= pos) end = text.find(' ', pos);
      if (end == std::string::npos) end = text.size();
    }
    *out += text.substr(pos, end - pos) + "\n";
    pos = end;
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos < text.size()) {
      out->append(indent, ' ');
      column = indent;
    }
  }
}

const char* Usage(const std::string& command) {
  if (command == "generate") {
    return "usage: zerfoo generate -m MODEL -p PROMPT [options]\n\n"
           "Streams a continuation of PROMPT to stdout; a summary line goes to stderr.\n";
  }
  if (command == "chat") {
    return "usage: zerfoo chat -m MODEL [options]\n\n"
           "Interactive chat using the model's chat template: one session keeps the conversation, each\n"
           "reply evaluates only what is new. Reads one message per line from stdin. Ctrl-C stops a\n"
           "reply, Ctrl-D exits.\n";
  }
  if (command == "info") return "usage: zerfoo info -m MODEL [options]\n\nPrints facts about the model and the backends.\n";
  if (command == "tokenize") {
    return "usage: zerfoo tokenize -m MODEL [options] TEXT\n\n"
           "Prints the token ids of TEXT ('-' reads stdin).\n";
  }
  if (command == "transcribe") {
    return "usage: zerfoo transcribe -m MODEL [options] FILE...\n\n"
           "Speech to text with a Whisper model (whisper.cpp's ggml .bin): each audio FILE (WAV, MP3,\n"
           "FLAC or Ogg Vorbis; any rate and channel count, up to 2 hours) is transcribed greedily with\n"
           "timestamps, as whisper.cpp does. Several files: txt/srt/vtt each after a '==> FILE <==' line,\n"
           "json one object per line.\n";
  }
  if (command == "bench") {
    return "usage: zerfoo bench -m MODEL [-m MODEL ...] [options]\n\n"
           "Throughput like llama-bench: ppN (prompt of N tokens in one batch) and tgN (N tokens\n"
           "generated one at a time), mean and standard deviation over repetitions. Lists are\n"
           "comma-separated, as in llama-bench; a list option given again adds to the list.\n";
  }
  return "usage: zerfoo serve -m MODEL[=NAME] [-m MODEL ...] [--models-dir DIR] [options]\n\n"
         "OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions (SSE with\n"
         "\"stream\": true), GET /v1/models, /health, /metrics (Prometheus), POST /tokenize,\n"
         "/detokenize, /apply-template. SIGTERM/SIGINT drain: stop accepting, let running requests\n"
         "finish for --grace seconds, then cancel them, exit 0. Several models: the request's \"model\"\n"
         "picks one, loaded on demand; POST /models/load, /models/unload.\n";
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

int ParsedArgs::LastPosition(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? -1 : it->second.back().position;
}

int64_t ParsedArgs::Int(const std::string& key, int64_t fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second.back().number;
}

uint64_t ParsedArgs::UInt(const std::string& key, uint64_t fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second.back().unsigned_number;
}

double ParsedArgs::Float(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second.back().real;
}

std::string ParsedArgs::String(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second.back().text;
}

std::vector<std::string> ParsedArgs::Strings(const std::string& key) const {
  std::vector<std::string> out;
  auto it = values_.find(key);
  if (it != values_.end()) {
    for (const Occurrence& o : it->second) out.push_back(o.text);
  }
  return out;
}

std::vector<int> ParsedArgs::Positions(const std::string& key) const {
  std::vector<int> out;
  auto it = values_.find(key);
  if (it != values_.end()) {
    for (const Occurrence& o : it->second) out.push_back(o.position);
  }
  return out;
}

std::vector<int64_t> ParsedArgs::IntList(const std::string& key, const std::vector<int64_t>& fallback) const {
  auto it = lists_.find(key);
  return it == lists_.end() ? fallback : it->second;
}

ParsedArgs ParseCommandLine(const std::string& command, int argc, char** argv, int first) {
  const unsigned bit = CommandBit(command);
  ParsedArgs a;
  bool options_done = false;
  int position = 0;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {  // "-" alone is a positional (stdin)
      a.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
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
    const OptionSpec& o = FindOption(name, bit, command);
    if (o.kind != ValueKind::kFlag && !inline_value) {
      if (i + 1 >= argc) throw UsageError("option '" + name + "' needs a value");
      value = argv[++i];
    } else if (o.kind == ValueKind::kFlag && inline_value) {
      throw UsageError("option '" + name + "' takes no value");
    }
    ParsedArgs::Occurrence occ{position++, value, 0, 0, 0.0};
    const auto lo = static_cast<int64_t>(o.lo), hi = static_cast<int64_t>(o.hi);
    switch (o.kind) {
      case ValueKind::kFlag:
      case ValueKind::kString: break;
      case ValueKind::kInt: occ.number = ParseInt(name, value, lo, hi); break;
      case ValueKind::kUInt: occ.unsigned_number = ParseU64(name, value); break;
      case ValueKind::kFloat: occ.real = ParseFloat(name, value, o.lo, o.hi); break;
      case ValueKind::kChoice: occ.number = ParseChoice(name, value, o.choices); break;
      case ValueKind::kIntList: {
        const std::vector<int64_t> list = ParseIntList(name, value, lo, hi);
        std::vector<int64_t>& all = a.lists_[o.names[0]];
        all.insert(all.end(), list.begin(), list.end());
        break;
      }
    }
    a.values_[o.names[0]].push_back(occ);
  }
  return a;
}

std::string CommandHelp(const std::string& command) {
  constexpr size_t kLeft = 28, kWidth = 100;
  std::string s = Usage(command);
  s += "\noptions:\n";
  const unsigned bit = CommandBit(command);
  for (const OptionSpec& o : kOptions) {
    if ((o.commands & bit) == 0) continue;
    // Short names (one dash) first, as in "-c, --ctx-size, --ctx N".
    std::string names;
    for (int pass = 0; pass < 2; ++pass) {
      for (const char* n : o.names) {
        if (n == nullptr || (n[1] == '-') != (pass == 1)) continue;
        names += (names.empty() ? "" : ", ") + std::string(n);
      }
    }
    std::string left = names.compare(0, 2, "--") == 0 ? "      " : "  ";  // long names line up
    left += names;
    if (o.metavar != nullptr) left += std::string(" ") + o.metavar;
    if (left.size() < kLeft) left.resize(kLeft, ' ');
    else left += "  ";
    s += left;
    std::string help = o.help;
    if (bit == kServe && o.serve_note != nullptr) help += std::string("; ") + o.serve_note;
    AppendWrapped(&s, left.size(), help, kLeft, kWidth);
  }
  return s;
}

int32_t DeviceOption(const ParsedArgs& a) { return static_cast<int32_t>(a.Int("--device", ZF_DEVICE_AUTO)); }

int32_t DraftMaxOption(const ParsedArgs& a) {
  if (a.Has("--draft-max")) return static_cast<int32_t>(a.Int("--draft-max", 0));
  return a.Has("--lookup") || a.Has("--model-draft") ? 8 : 0;
}

Options ParseArgs(const std::string& command, int argc, char** argv, int first) {
  const ParsedArgs a = ParseCommandLine(command, argc, argv, first);
  Options o;
  o.command = command;
  o.positional = a.positional;
  o.model = a.String("--model");
  o.prompt = a.String("--prompt");
  o.system = a.String("--system");
  o.show_reasoning = a.Int("--reasoning", 1) != 0;
  o.template_file = a.String("--chat-template-file");
  o.mmproj = a.String("--mmproj");
  o.images = a.Strings("--image");
  o.audios = a.Strings("--audio");
  {  // one media list in command-line order, as llama-mtmd-cli pairs files with markers
    const std::vector<int> ip = a.Positions("--image"), ap = a.Positions("--audio");
    size_t i = 0, j = 0;
    while (i < ip.size() || j < ap.size()) {
      if (j == ap.size() || (i < ip.size() && ip[i] < ap[j])) {
        o.media.push_back({false, o.images[i++]});
      } else {
        o.media.push_back({true, o.audios[j++]});
      }
    }
  }
  o.stop = a.Strings("--stop");
  o.json = a.Has("--json");
  o.no_special = a.Has("--no-special");
  o.ignore_eos = a.Has("--ignore-eos");
  o.parse_special = a.Has("--parse-special");
  o.verbose = a.Has("--verbose");
  o.help = a.Has("--help");
  o.device = DeviceOption(a);
  o.threads = static_cast<int32_t>(a.Int("--threads", 0));
  o.ctx = static_cast<int32_t>(a.Int("--ctx-size", 0));
  o.kv_type = static_cast<int32_t>(a.Int("--cache-type-k", ZF_KV_F16));
  o.kv_type_v = static_cast<int32_t>(a.Int("--cache-type-v", ZF_KV_SAME));
  auto i32 = [&](const char* key, std::optional<int32_t>* out) {
    if (a.Has(key)) *out = static_cast<int32_t>(a.Int(key, 0));
  };
  auto f32 = [&](const char* key, std::optional<float>* out) {
    if (a.Has(key)) *out = static_cast<float>(a.Float(key, 0));
  };
  i32("--n-predict", &o.n_predict);
  i32("--top-k", &o.top_k);
  i32("--repeat-last-n", &o.repeat_last_n);
  f32("--temp", &o.temp);
  f32("--top-p", &o.top_p);
  f32("--min-p", &o.min_p);
  f32("--repeat-penalty", &o.repeat_penalty);
  if (a.Has("--seed")) o.seed = a.UInt("--seed", 0);
  o.model_draft = a.String("--model-draft");
  o.draft_max = DraftMaxOption(a);
  o.draft_min = static_cast<int32_t>(a.Int("--draft-min", 0));
  if (o.help) return o;

  if (o.model.empty()) throw UsageError("missing -m MODEL");
  if (command == "tokenize") {
    if (o.positional.size() != 1) throw UsageError("tokenize takes exactly one TEXT argument ('-' reads stdin)");
  } else if (!o.positional.empty()) {
    throw UsageError("unexpected argument '" + o.positional[0] + "'");
  }
  if (command == "generate" && o.prompt.empty()) throw UsageError("missing -p PROMPT");
  if (!o.media.empty() && o.mmproj.empty()) {
    // As llama-server's router finds one: mmproj-NAME.gguf beside NAME.gguf, or the one
    // mmproj*.gguf in the model's own folder (model_files.h).
    o.mmproj = ProjectorBeside(o.model);
    o.mmproj_found = !o.mmproj.empty();
    if (o.mmproj.empty()) {
      throw UsageError(std::string(o.media[0].audio ? "--audio needs the model's audio projector"
                                                    : "--image needs the model's vision projector") +
                       ": add --mmproj FILE (none found beside the model: mmproj-NAME.gguf, or one mmproj*.gguf "
                       "in the model's own folder)");
    }
  }
  // generate: one <__media__> per file, or none (llama-mtmd-cli's rule; media_input.h).
  size_t markers = 0;
  for (size_t at = o.prompt.find("<__media__>"); at != std::string::npos; at = o.prompt.find("<__media__>", at + 1)) {
    ++markers;
  }
  if (command == "generate" && markers != 0 && markers != o.media.size()) {
    throw UsageError("-p holds " + std::to_string(markers) + " <__media__> markers but " +
                     std::to_string(o.media.size()) +
                     " --image/--audio files are given (one marker per file, in command-line order, or none)");
  }
  return o;
}

}  // namespace cli
