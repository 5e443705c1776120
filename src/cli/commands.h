// The subcommands. Each returns the process exit code (see common.h).
#ifndef ZERFOO_CLI_COMMANDS_H
#define ZERFOO_CLI_COMMANDS_H

#include "args.h"

namespace cli {

int RunGenerate(const Options& opts);
int RunChat(const Options& opts);
int RunInfo(const Options& opts);
int RunTokenize(const Options& opts);
// `zerfoo bench`: llama-bench style flags (lists such as -t 1,2), from the same option table.
int RunBench(int argc, char** argv, int first);
// `zerfoo serve` (OpenAI-compatible HTTP server): ServeOptions, from the same option table.
int RunServe(int argc, char** argv, int first);
// `zerfoo transcribe` (speech to text with a Whisper .bin): its options from the same table.
int RunTranscribe(int argc, char** argv, int first);

}  // namespace cli

#endif  // ZERFOO_CLI_COMMANDS_H
