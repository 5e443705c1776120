// zerfoo CLI entry point: subcommand dispatch and exit codes (0 ok, 1 runtime error,
// 2 usage error, 130 interrupted by Ctrl-C).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "args.h"
#include "commands.h"
#include "common.h"
#include "interrupt.h"
#include "zerfoo.h"

namespace {

constexpr const char* kUsage =
    "usage: zerfoo <command> [options]\n"
    "\n"
    "commands:\n"
    "  generate   stream a continuation of a prompt\n"
    "  chat       interactive chat with the model's chat template\n"
    "  info       show model facts and available backends\n"
    "  tokenize   print the token ids of a text\n"
    "  bench      prompt/generation throughput, llama-bench style\n"
    "  serve      OpenAI-compatible HTTP server (chat, completions, SSE, metrics)\n"
    "  transcribe speech to text with a Whisper model (WAV/MP3/FLAC/Ogg in; txt, srt, vtt or json out)\n"
    "  help       show this help, or `zerfoo help <command>`\n"
    "\n"
    "Run `zerfoo <command> --help` for a command's options; `zerfoo --version` for the version.\n";

int ReportUsage(const std::string& msg, const std::string& command) {
  std::fprintf(stderr, "zerfoo: error: %s\n", msg.c_str());
  if (command.empty()) {
    std::fprintf(stderr, "Run 'zerfoo --help' for usage.\n");
  } else {
    std::fprintf(stderr, "Run 'zerfoo %s --help' for usage.\n", command.c_str());
  }
  return cli::kExitUsage;
}

int Dispatch(const cli::Options& o) {
  if (o.command == "generate") return cli::RunGenerate(o);
  if (o.command == "chat") return cli::RunChat(o);
  if (o.command == "info") return cli::RunInfo(o);
  return cli::RunTokenize(o);
}

}  // namespace

int main(int argc, char** argv) {
  cli::interrupt::Install();
  // Warnings only by default, but an explicit ZF_LOG_LEVEL in the environment wins.
  if (std::getenv("ZF_LOG_LEVEL") == nullptr) zf_set_log_level(ZF_LOG_WARN);

  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return cli::kExitUsage;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "-V" || cmd == "version") {
    std::printf("zerfoo %s (built against header %d.%d.%d)\n", zf_version_string(), ZF_VERSION_MAJOR,
                ZF_VERSION_MINOR, ZF_VERSION_PATCH);
    return cli::kExitOk;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    if (argc >= 3 && std::strcmp(argv[2], "serve") == 0) {
      char help_flag[] = "--help";
      char* serve_argv[] = {argv[0], argv[2], help_flag};
      return cli::RunServe(3, serve_argv, 2);
    }
    if (argc >= 3 && cli::IsCommand(argv[2])) {
      std::fputs(cli::CommandHelp(argv[2]).c_str(), stdout);
    } else if (argc >= 3) {
      return ReportUsage(std::string("unknown command '") + argv[2] + "'", "");
    } else {
      std::fputs(kUsage, stdout);
    }
    return cli::kExitOk;
  }
  if (cmd == "bench") {
    try {
      return cli::RunBench(argc, argv, 2);
    } catch (const cli::UsageError& e) {
      return ReportUsage(e.what(), cmd);
    }
  }
  if (cmd == "transcribe") {
    try {
      return cli::RunTranscribe(argc, argv, 2);
    } catch (const cli::UsageError& e) {
      return ReportUsage(e.what(), cmd);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zerfoo: error: %s\n", e.what());
      return cli::kExitRuntime;
    }
  }
  if (cmd == "serve") {
    try {
      return cli::RunServe(argc, argv, 2);
    } catch (const cli::UsageError& e) {
      return ReportUsage(e.what(), cmd);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zerfoo: error: %s\n", e.what());
      return cli::kExitRuntime;
    }
  }
  if (!cli::IsCommand(cmd)) {
    return ReportUsage(cmd[0] == '-' ? "expected a command before '" + cmd + "'" : "unknown command '" + cmd + "'",
                      "");
  }

  cli::Options opts;
  try {
    opts = cli::ParseArgs(cmd, argc, argv, 2);
  } catch (const cli::UsageError& e) {
    return ReportUsage(e.what(), cmd);
  }
  if (opts.help) {
    std::fputs(cli::CommandHelp(cmd).c_str(), stdout);
    return cli::kExitOk;
  }
  if (opts.verbose) zf_set_log_level(ZF_LOG_INFO);

  try {
    return Dispatch(opts);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc in the CLI's own containers
    std::fprintf(stderr, "zerfoo: error: %s\n", e.what());
    return cli::kExitRuntime;
  }
}
