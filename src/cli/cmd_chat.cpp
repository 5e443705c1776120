// `zerfoo chat`: a REPL over one session, each reply one library chat turn (zf_chat_turn). The
// conversation is kept as OpenAI messages (each turn's final assistant message comes back from
// zf_chat_turn_message); every turn sends all of it, and the library evaluates only what the
// session does not already hold.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "media_input.h"
#include "interrupt.h"
#include "json.h"

namespace cli {
namespace {

struct TurnDeleter {
  void operator()(zf_turn* t) const { zf_chat_turn_free(t); }
};
using TurnPtr = std::unique_ptr<zf_turn, TurnDeleter>;

// {"messages":[...]}: the messages are JSON objects already.
std::string RequestJson(const std::vector<std::string>& messages) {
  std::string s = "{\"messages\":[";
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) s += ',';
    s += messages[i];
  }
  return s + "]}";
}

std::string MessageJson(const char* role, const std::string& content) {
  return json::Object().Str("role", role).Str("content", content).Done();
}

// Streams a turn's events to stdout as they arrive. Reasoning is set apart from the answer:
// dimmed on a terminal, between [reasoning] lines otherwise; tool calls get a line each.
class TurnPrinter {
 public:
  TurnPrinter(bool quiet, bool show_reasoning)
      : quiet_(quiet), show_reasoning_(show_reasoning),
        dim_(isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr) {}

  static int32_t Callback(void* user_data, const zf_turn_event* e) {
    static_cast<TurnPrinter*>(user_data)->On(*e);
    return 0;
  }

  // After the turn: closes what is open and ends the output on a fresh line.
  void Finish() {
    Enter(0);
    if (last_ != '\n') Write("\n", 1);
    std::fflush(stdout);
  }

  const zf_turn_event& done() const { return done_; }

 private:
  void On(const zf_turn_event& e) {
    if (e.kind == ZF_TURN_DONE) {
      done_ = e;  // only its numbers are read later; its pointers are NULL
      return;
    }
    if (quiet_) return;
    switch (e.kind) {
      case ZF_TURN_CONTENT:
        Enter(ZF_TURN_CONTENT);
        Write(e.text, e.text_len);
        break;
      case ZF_TURN_REASONING:
        if (!show_reasoning_) return;
        Enter(ZF_TURN_REASONING);
        Write(e.text, e.text_len);
        break;
      case ZF_TURN_TOOL_CALL:
        Enter(0);
        Enter(ZF_TURN_TOOL_CALL);
        Write("[tool call ", 11);
        if (e.tool_name != nullptr) Write(e.tool_name, std::strlen(e.tool_name));
        Write("] ", 2);
        break;
      case ZF_TURN_TOOL_ARGS:
        Write(e.text, e.text_len);
        break;
      default: return;  // logprobs, and kinds a newer library adds
    }
    std::fflush(stdout);
  }

  // Closes the open section and opens `kind` (0: none).
  void Enter(int32_t kind) {
    if (kind == section_) return;
    if (section_ == ZF_TURN_REASONING) {
      if (dim_) Raw("\x1b[0m");
      if (last_ != '\n') Write("\n", 1);
      if (!dim_) Write("[/reasoning]\n", 13);
    } else if (section_ == ZF_TURN_TOOL_CALL && last_ != '\n') {
      Write("\n", 1);
    }
    section_ = kind;
    if (kind == ZF_TURN_REASONING) {
      if (last_ != '\n') Write("\n", 1);
      if (dim_) Raw("\x1b[2m");
      else Write("[reasoning]\n", 12);
    } else if (kind != 0 && last_ != '\n') {
      Write("\n", 1);  // the answer after reasoning or a call starts on its own line
    }
  }

  void Write(const char* text, size_t len) {
    if (len == 0) return;
    std::fwrite(text, 1, len, stdout);
    last_ = text[len - 1];
  }
  void Raw(const char* escape) { std::fputs(escape, stdout); }  // does not move the cursor

  const bool quiet_, show_reasoning_, dim_;
  int32_t section_ = 0;
  char last_ = '\n';
  zf_turn_event done_{};
};

const char* FinishReasonName(int32_t reason) {
  switch (reason) {
    case ZF_FINISH_STOP: return "stop";
    case ZF_FINISH_LENGTH: return "length";
    case ZF_FINISH_TOOL_CALLS: return "tool_calls";
    default: return "unknown";
  }
}

// --verbose: the turn's numbers on stderr; prefill speed counts the tokens evaluated, not
// those the session or the prefix cache already held.
void PrintTurnSummary(const zf_turn_event& d) {
  std::fprintf(stderr,
               "prompt %d tok (%d cached), generated %d tok, prefill %.1f tok/s, decode %.1f tok/s, stop: %s\n",
               static_cast<int>(d.n_prompt), static_cast<int>(d.n_cached), static_cast<int>(d.n_generated),
               TokPerSec(d.n_prompt - d.n_cached, d.prompt_ms), TokPerSec(d.n_generated, d.decode_ms),
               StopReasonName(d.stop_reason));
  if (d.n_drafted > 0) {
    std::fprintf(stderr, "drafts: %d tok drafted, %d accepted (%.0f%%)\n", static_cast<int>(d.n_drafted),
                 static_cast<int>(d.n_accepted), 100.0 * d.n_accepted / d.n_drafted);
  }
}

// --json: one line per turn, the assistant message as the library wrote it and the usage.
void PrintTurnJson(const std::string& message, const zf_turn_event& d) {
  const std::string obj = json::Object()
                              .Raw("message", message)
                              .Int("prompt_tokens", d.n_prompt)
                              .Int("cached_tokens", d.n_cached)
                              .Int("generated_tokens", d.n_generated)
                              .Num("prefill_tok_s", TokPerSec(d.n_prompt - d.n_cached, d.prompt_ms))
                              .Num("decode_tok_s", TokPerSec(d.n_generated, d.decode_ms))
                              .Str("finish_reason", FinishReasonName(d.finish_reason))
                              .Str("stop_reason", StopReasonName(d.stop_reason))
                              .Int("drafted_tokens", d.n_drafted)
                              .Int("accepted_tokens", d.n_accepted)
                              .Done();
  std::printf("%s\n", obj.c_str());
  std::fflush(stdout);
}

}  // namespace

int RunChat(const Options& opts) {
  std::string tmpl;
  if (!opts.template_file.empty()) {
    std::ifstream f(opts.template_file, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "zerfoo: cannot read template file '%s'\n", opts.template_file.c_str());
      return kExitUsage;
    }
    tmpl.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  ModelPtr model;
  SessionPtr session;
  if (!OpenModelAndSession(opts, &model, &session)) return kExitRuntime;
  MmprojPtr mmproj;
  std::vector<MediaInput> media;  // --image / --audio: sent with the first message
  if (!LoadMediaInputs(opts, model.get(), &mmproj, &media)) return kExitRuntime;

  std::vector<const char*> stops;
  const zf_generate_params gp = MakeGenerateParams(opts, &stops);
  const bool interactive = isatty(STDIN_FILENO) == 1;
  std::vector<std::string> messages;  // the conversation, OpenAI message objects
  if (!opts.system.empty()) messages.push_back(MessageJson("system", opts.system));
  const size_t first_turn = messages.size();  // index of the first user message

  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stderr);
      std::fflush(stderr);
    }
    if (!std::getline(std::cin, line)) break;  // EOF (Ctrl-D) ends the chat normally
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;

    if (media.empty()) {
      messages.push_back(MessageJson("user", line));
    } else {
      messages.push_back(json::Object().Str("role", "user").Raw("content", MediaContentJson(media, line)).Done());
      media.clear();
    }
    zf_status st = ZF_OK;
    TurnPtr turn;
    TurnPrinter printer(opts.json, opts.show_reasoning);
    for (int attempt = 0;; ++attempt) {
      const std::string request = RequestJson(messages);
      zf_turn_params tp;
      zf_turn_params_init(&tp, sizeof tp);
      tp.request_json = request.c_str();
      if (!tmpl.empty()) tp.template_text = tmpl.c_str();
      tp.generate = &gp;
      tp.mmproj = mmproj.get();
      zf_turn* t = nullptr;
      {
        interrupt::CancelScope scope(session.get());
        st = zf_chat_turn(session.get(), &tp, &TurnPrinter::Callback, &printer, &t);
        scope.Stop();
        turn.reset(t);
        // A Ctrl-C the turn did not see (it came as the reply ended, or while rendering) leaves
        // a cancel request pending that would stop the next turn at once; only a reset clears
        // it (the next turn then evaluates the whole conversation again).
        const bool consumed = st == ZF_ERR_CANCELLED || (st == ZF_OK && printer.done().stop_reason == ZF_STOP_CANCELLED);
        if (scope.cancel_sent() && !consumed) zf_session_reset(session.get());
      }
      // The conversation no longer fits: once, drop the earlier turns and ask again.
      if (st == ZF_ERR_CONTEXT_FULL && attempt == 0 && messages.size() > first_turn + 1) {
        std::fputs("zerfoo: context is full; starting a new conversation\n", stderr);
        messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(first_turn), messages.end() - 1);
        continue;
      }
      break;
    }
    printer.Finish();
    if (st == ZF_ERR_CONTEXT_FULL) {  // even this one message does not fit: say so, go on
      ReportError(st);
      messages.pop_back();
      continue;
    }
    if (st == ZF_ERR_CANCELLED) {  // stopped during the prompt: forget this turn
      messages.pop_back();
      continue;
    }
    if (st != ZF_OK) return ReportError(st);
    const zf_turn_event& done = printer.done();
    if (done.stop_reason == ZF_STOP_CANCELLED && done.n_generated == 0) {
      messages.pop_back();  // stopped before the reply began: forget this turn too
      continue;
    }
    std::string message;
    st = FetchString([&](char* buf, size_t cap, size_t* needed) {
      return zf_chat_turn_message(turn.get(), buf, cap, needed);
    }, true, &message);
    if (st != ZF_OK) return ReportError(st);
    if (opts.json) PrintTurnJson(message, done);
    else if (opts.verbose) PrintTurnSummary(done);
    messages.push_back(std::move(message));
  }
  if (interactive) std::fputc('\n', stderr);
  return kExitOk;
}

}  // namespace cli
