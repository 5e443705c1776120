// `zerfoo transcribe -m MODEL FILE...`: speech to text with a Whisper .bin through the C API,
// each file's transcript on stdout as txt, srt, vtt or json.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "audio_decode.h"
#include "commands.h"
#include "common.h"
#include "json.h"
#include "transcript.h"
#include "zerfoo.h"

namespace cli {
namespace {

struct SpeechDeleter {
  void operator()(zf_speech_model* m) const { zf_speech_free(m); }
};

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return !f.bad();
}

std::string Format(const transcript::Transcript& t, int64_t format) {
  switch (format) {
    case 1: return transcript::Srt(t);
    case 2: return transcript::Vtt(t);
    case 3: return transcript::Json(t, true) + "\n";
    default: return transcript::Text(t);
  }
}

}  // namespace

int RunTranscribe(int argc, char** argv, int first) {
  const ParsedArgs a = ParseCommandLine("transcribe", argc, argv, first);
  if (a.Has("--help")) {
    std::fputs(CommandHelp("transcribe").c_str(), stdout);
    return kExitOk;
  }
  if (a.Has("--verbose")) zf_set_log_level(ZF_LOG_INFO);
  const std::string model_path = a.String("--model");
  if (model_path.empty()) throw UsageError("--model is required (a whisper.cpp ggml .bin file)");
  if (a.positional.empty()) throw UsageError("no audio FILE given");
  const int64_t format = a.Int("--output-format", 0);
  const std::string language = a.String("--language");
  const std::string prompt = a.String("--prompt");

  zf_transcribe_params p;
  zf_transcribe_params_init(&p, sizeof p);
  p.n_threads = static_cast<int32_t>(a.Int("--threads", 0));
  p.language = language.empty() ? nullptr : language.c_str();
  if (a.Has("--translate")) p.flags |= ZF_TRANSCRIBE_TRANSLATE;
  if (a.Has("--no-timestamps")) p.flags |= ZF_TRANSCRIBE_NO_TIMESTAMPS;
  if (a.Has("--word-timestamps")) p.flags |= ZF_TRANSCRIBE_WORD_TIMESTAMPS;
  if (a.Has("--carry-initial-prompt")) p.flags |= ZF_TRANSCRIBE_CARRY_PROMPT;
  p.initial_prompt = prompt.empty() ? nullptr : prompt.c_str();
  // Decoding as whisper-cli's flags; what is not given keeps the library's (whisper.cpp's) default.
  p.temperature = static_cast<float>(a.Float("--temperature", p.temperature));
  p.temperature_inc = a.Has("--no-fallback") ? 0.0f : static_cast<float>(a.Float("--temperature-inc", p.temperature_inc));
  p.beam_size = static_cast<int32_t>(a.Int("--beam-size", p.beam_size));
  p.best_of = static_cast<int32_t>(a.Int("--best-of", p.best_of));
  p.seed = static_cast<uint32_t>(a.UInt("--seed", p.seed));
  p.n_max_text_ctx = static_cast<int32_t>(a.Int("--max-context", p.n_max_text_ctx));

  zf_speech_model* raw = nullptr;
  if (zf_status st = zf_speech_load(model_path.c_str(), 0, &raw)) return ReportError(st);
  std::unique_ptr<zf_speech_model, SpeechDeleter> model(raw);

  const bool several = a.positional.size() > 1;
  int rc = kExitOk;
  for (const std::string& file : a.positional) {
    std::string bytes;
    if (!ReadFile(file, &bytes)) {
      std::fprintf(stderr, "zerfoo: error: %s: cannot read the file\n", file.c_str());
      rc = kExitRuntime;
      continue;
    }
    std::vector<float> pcm;
    std::string error;
    if (audio::Decode(bytes, &pcm, &error) != ZF_OK) {
      std::fprintf(stderr, "zerfoo: error: %s: %s\n", file.c_str(), error.c_str());
      rc = kExitRuntime;
      continue;
    }
    transcript::Transcript t;
    if (zf_status st = transcript::Run(model.get(), pcm, p, {}, &t, &error)) {
      std::fprintf(stderr, "zerfoo: error: %s: %s: %s\n", file.c_str(), zf_status_string(st), error.c_str());
      return kExitRuntime;  // the options are wrong for every file alike
    }
    std::string out = Format(t, format);
    if (several && format == 3) {
      out = "{\"file\":" + json::Quote(file) + "," + out.substr(1);
    } else if (several) {
      out = "==> " + file + " <==\n" + out;
    }
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
  }
  return rc;
}

}  // namespace cli
