// `zerfoo chat`: a REPL over one session. The session keeps its KV cache between turns, so each
// turn feeds only the part of the rendered conversation the cache has not seen yet.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "common.h"
#include "interrupt.h"

namespace cli {
namespace {

using History = std::vector<std::pair<std::string, std::string>>;  // (role, content)

// The conversation through the chat template: the model's, or the --template file's text.
zf_status Render(const zf_model* model, const History& history, const std::string& tmpl, std::string* out) {
  std::vector<zf_chat_message_v2> msgs(history.size());
  for (size_t i = 0; i < history.size(); ++i) {
    msgs[i] = zf_chat_message_v2{};
    msgs[i].struct_size = sizeof(zf_chat_message_v2);
    msgs[i].role = history[i].first.c_str();
    msgs[i].content = history[i].second.c_str();
  }
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.flags = ZF_CHAT_ADD_ASSISTANT;
  if (!tmpl.empty()) p.template_text = tmpl.c_str();
  return FetchString(
      [&](char* buf, size_t cap, size_t* needed) {
        return zf_chat_apply_template_v2(model, msgs.data(), msgs.size(), &p, buf, cap, needed);
      },
      true, out);
}

// Streams the reply to stdout and keeps a copy for the history.
int32_t OnPiece(void* user_data, const char* piece, size_t len, int32_t /*token*/) {
  static_cast<std::string*>(user_data)->append(piece, len);
  std::fwrite(piece, 1, len, stdout);
  std::fflush(stdout);
  return 0;
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
  zf_status st = ZF_OK;

  // Templates that spell out the BOS text themselves (Llama 3, ...) must not get a second BOS.
  std::string bos_text;
  {
    zf_model_summary info;
    info.struct_size = sizeof info;
    if (zf_model_info(model.get(), &info) == ZF_OK && info.token_bos >= 0) {
      FetchString([&](char* buf, size_t cap, size_t* needed) {
        return zf_token_to_piece(model.get(), info.token_bos, ZF_DETOKENIZE_RENDER_SPECIAL, buf, cap, needed);
      }, false, &bos_text);
    }
  }

  std::vector<const char*> stops;
  const zf_generate_params base = MakeGenerateParams(opts, &stops);
  const bool interactive = isatty(STDIN_FILENO) == 1;
  History history;
  if (!opts.system.empty()) history.emplace_back("system", opts.system);
  const size_t first_turn = history.size();  // index of the first user message
  std::string fed;  // the text the KV cache holds: last rendering + the reply generated after it

  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stderr);
      std::fflush(stderr);
    }
    if (!std::getline(std::cin, line)) break;  // EOF (Ctrl-D) ends the chat normally
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;

    history.emplace_back("user", line);
    std::string rendered, reply;
    bool stale_cancel = false;
    zf_generate_result r{};
    r.struct_size = sizeof r;
    for (int attempt = 0;; ++attempt) {
      st = Render(model.get(), history, tmpl, &rendered);
      if (st != ZF_OK) return ReportError(st);

      // Continue the cached conversation when the new rendering extends it; otherwise (the
      // template rewrote earlier turns) start over and feed everything.
      zf_generate_params gp = base;
      size_t skip = 0;
      if (!fed.empty() && rendered.compare(0, fed.size(), fed) == 0) {
        skip = fed.size();
        gp.flags |= ZF_GENERATE_NO_SPECIAL;  // BOS only opens a conversation
      } else if (!fed.empty()) {
        zf_session_reset(session.get());
      }
      if (skip == 0 && !bos_text.empty() && rendered.compare(0, bos_text.size(), bos_text) == 0) {
        gp.flags |= ZF_GENERATE_NO_SPECIAL;
      }
      {
        interrupt::CancelScope scope(session.get());
        st = zf_generate(session.get(), rendered.data() + skip, rendered.size() - skip, &gp, &OnPiece, &reply, &r);
        scope.Stop();
        // Ctrl-C as the reply ended leaves a cancel request pending that would stop the next
        // turn at once; only a reset clears it (the next turn then re-feeds everything).
        // Failed calls are reset on their own paths below.
        stale_cancel = st == ZF_OK && scope.cancel_sent() && r.stop_reason != ZF_STOP_CANCELLED;
      }
      if (stale_cancel) zf_session_reset(session.get());
      // The conversation no longer fits: once, drop the earlier turns and ask again.
      if (st == ZF_ERR_CONTEXT_FULL && attempt == 0 && history.size() > first_turn + 1) {
        std::fputs("zerfoo: context is full; starting a new conversation\n", stderr);
        history.erase(history.begin() + static_cast<std::ptrdiff_t>(first_turn), history.end() - 1);
        fed.clear();
        zf_session_reset(session.get());
        continue;
      }
      break;
    }
    if (!reply.empty() && reply.back() != '\n') std::fputc('\n', stdout);
    std::fflush(stdout);
    if (st == ZF_ERR_CONTEXT_FULL) {  // even this one message does not fit: say so, go on
      ReportError(st);
      history.pop_back();
      fed.clear();
      zf_session_reset(session.get());
      continue;
    }
    if (st != ZF_OK) return ReportError(st);
    if (opts.verbose) PrintSummary(r);
    if (r.stop_reason == ZF_STOP_CANCELLED && r.n_generated == 0) {
      // Stopped during the prompt: the cache holds part of it, so forget this turn entirely.
      history.pop_back();
      fed.clear();
      zf_session_reset(session.get());
      continue;
    }

    history.emplace_back("assistant", reply);
    fed = stale_cancel ? std::string() : std::move(rendered) + reply;
  }
  if (interactive) std::fputc('\n', stderr);
  return kExitOk;
}

}  // namespace cli
