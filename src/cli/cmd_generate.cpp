// `zerfoo generate`: one prompt in, streamed text out (or one JSON object with --json).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "media_input.h"
#include "interrupt.h"
#include "json.h"

namespace cli {
namespace {

struct Sink {
  bool collect = false;  // --json: keep the text instead of printing it
  std::string text;
  char last = '\n';      // last byte written, to end the output on a fresh line
};

int32_t OnPiece(void* user_data, const char* piece, size_t len, int32_t /*token*/) {
  auto* sink = static_cast<Sink*>(user_data);
  if (len == 0) return 0;
  if (sink->collect) {
    sink->text.append(piece, len);
  } else {
    std::fwrite(piece, 1, len, stdout);
    std::fflush(stdout);  // stream: show each piece as soon as it exists
    sink->last = piece[len - 1];
  }
  return 0;
}

}  // namespace

int RunGenerate(const Options& opts) {
  ModelPtr model;
  SessionPtr session;
  if (!OpenModelAndSession(opts, &model, &session)) return kExitRuntime;
  MmprojPtr mmproj;
  std::vector<MediaInput> media;
  if (!LoadMediaInputs(opts, model.get(), &mmproj, &media)) return kExitRuntime;
  zf_status st = ZF_OK;

  std::vector<const char*> stops;
  const zf_generate_params gp = MakeGenerateParams(opts, &stops);
  zf_generate_result r{};
  r.struct_size = sizeof r;
  Sink sink;
  sink.collect = opts.json;
  {
    interrupt::CancelScope scope(session.get());
    // With images or audio the prompt up to the last file is evaluated first; generation continues after.
    std::string rest;
    const auto t0 = std::chrono::steady_clock::now();
    st = EvalPromptMedia(opts, model.get(), session.get(), mmproj.get(), media, &rest);
    const double media_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int32_t n_before = 0;
    if (st == ZF_OK) st = zf_session_n_past(session.get(), &n_before);
    if (st == ZF_OK) st = zf_generate(session.get(), rest.data(), rest.size(), &gp, &OnPiece, &sink, &r);
    // The prompt is all of it: the text and files evaluated before, and the rest.
    r.n_prompt += n_before;
    if (n_before > 0) r.prompt_ms += media_ms;
  }
  if (sink.last != '\n') std::fputc('\n', stdout);
  std::fflush(stdout);
  if (st != ZF_OK) return ReportError(st);

  if (opts.json) {
    const std::string obj = json::Object()
                                .Str("text", sink.text)
                                .Int("prompt_tokens", r.n_prompt)
                                .Int("generated_tokens", r.n_generated)
                                .Num("prefill_tok_s", TokPerSec(r.n_prompt, r.prompt_ms))
                                .Num("decode_tok_s", TokPerSec(r.n_generated, r.decode_ms))
                                .Str("stop_reason", StopReasonName(r.stop_reason))
                                .Int("drafted_tokens", r.n_drafted)
                                .Int("accepted_tokens", r.n_accepted)
                                .Done();
    std::printf("%s\n", obj.c_str());
  } else {
    PrintSummary(r);
  }
  return r.stop_reason == ZF_STOP_CANCELLED ? kExitInterrupted : kExitOk;
}

}  // namespace cli
