// `zerfoo serve`: an OpenAI-compatible HTTP server (cpp-httplib + nlohmann-json) over the public
// C ABI only. The server lives in src/cli/serve/ (one job per file, see server.h); this file is
// the subcommand's entry point, and the stub a build without cpp-httplib gets.
//
// --parallel N sessions ("slots") are created at start; each request runs its whole generation
// on its HTTP worker thread through the pull-style API (zf_generate_begin / zf_generation_next),
// so SSE chunks go out as pieces arrive and a client that goes away stops its generation at the
// next piece. Requests beyond the slots wait in a bounded queue; beyond that they get 503 +
// Retry-After.
//
// Prompt caching: each slot remembers its session's conversation (zf_session_tokens). A request
// takes the idle slot sharing the longest token prefix with its prompt; zf_session_truncate keeps
// that prefix and only the rest is evaluated (zf_session_eval), then zf_generate_begin with an
// empty prompt samples from those logits.
#include "commands.h"

#if ZF_CLI_HAVE_HTTPLIB

#include <cstdio>

#include "common.h"
#include "serve/options.h"
#include "serve/server.h"

namespace cli {

int RunServe(int argc, char** argv, int first) {
  const serve::ServeOptions o = serve::ParseServeArgs(argc, argv, first);
  if (o.help) {
    std::fputs(serve::ServeHelp().c_str(), stdout);
    return kExitOk;
  }
  if (o.verbose) zf_set_log_level(ZF_LOG_INFO);
  serve::InstallSignalHandlers();
  serve::Server server(o);
  return server.Run();
}

}  // namespace cli

#else  // !ZF_CLI_HAVE_HTTPLIB

#include <cstdio>

#include "common.h"

namespace cli {
int RunServe(int, char**, int) {
  std::fputs("zerfoo: error: this build has no HTTP server (configured with -DZF_CLI_SERVE=OFF or without cpp-httplib)\n", stderr);
  return kExitRuntime;
}
}  // namespace cli

#endif
