// Command-line parsing for the zerfoo CLI: one Options struct filled from argv, strict numbers.
#ifndef ZERFOO_CLI_ARGS_H
#define ZERFOO_CLI_ARGS_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli {

// Thrown for anything the user typed wrong; main() turns it into exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sampling overrides stay unset unless a flag was given, so zf_generate_params_init's
// defaults apply otherwise.
struct Options {
  std::string command;  // "generate", "chat", "info", "tokenize"
  std::string model;
  std::string prompt;
  std::string system;
  std::string template_file;  // chat: a Jinja chat template to use instead of the model's
  std::vector<std::string> positional;
  std::vector<std::string> stop;
  bool json = false;
  bool no_special = false;
  bool ignore_eos = false;
  bool parse_special = false;
  bool verbose = false;
  bool help = false;
  int32_t device = 0;  // ZF_DEVICE_AUTO
  int32_t threads = 0;
  int32_t ctx = 0;
  std::optional<int32_t> n_predict, top_k, repeat_last_n;
  std::optional<float> temp, top_p, min_p, repeat_penalty;
  std::optional<uint64_t> seed;
  std::string model_draft;  // -md: a draft model drafts instead of prompt lookup
  int32_t draft_max = 0;  // --lookup / --draft-max / -md: speculative decoding
  int32_t draft_min = 0;
};

// True for the four subcommands the CLI knows.
bool IsCommand(const std::string& name);

// Parses argv[first..argc) for `command`; throws UsageError. Does not check required flags
// when --help is present, so `zerfoo generate --help` always works.
Options ParseArgs(const std::string& command, int argc, char** argv, int first);

// The --help text of one subcommand, generated from the same table the parser uses.
std::string CommandHelp(const std::string& command);

// Strict number parsing: the whole string must be consumed and lie in [lo, hi].
// `what` names the flag in the error message.
int64_t ParseInt(const std::string& what, const std::string& s, int64_t lo, int64_t hi);
uint64_t ParseU64(const std::string& what, const std::string& s);
double ParseFloat(const std::string& what, const std::string& s, double lo, double hi);

}  // namespace cli

#endif  // ZERFOO_CLI_ARGS_H
