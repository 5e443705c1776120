// Command-line parsing for the zerfoo CLI. One option table (args.cpp) declares every option of
// every subcommand once: its names and aliases, the kind of value it takes, the range that value
// must lie in and its help text. ParseCommandLine reads argv against it for one command; each
// command then reads the typed values it needs (Options below, serve's ServeOptions, bench's
// lists), and CommandHelp prints a command's options from the same table.
#ifndef ZERFOO_CLI_ARGS_H
#define ZERFOO_CLI_ARGS_H

#include <cstdint>
#include <map>
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

// The value an option takes.
enum class ValueKind {
  kFlag,     // no value: present or not
  kInt,      // an integer in [lo, hi]
  kFloat,    // a finite number in [lo, hi]
  kUInt,     // a non-negative 64-bit integer (--seed)
  kString,   // any text; given again, the last one counts (Strings() keeps them all)
  kChoice,   // one of a fixed set of words, each standing for an integer
  kIntList,  // comma-separated integers in [lo, hi]; given again, the lists add up
};

// The values found on one command line, keyed by each option's canonical (first) name, e.g.
// "--threads" whichever alias was typed. Scalars: the last occurrence counts.
class ParsedArgs {
 public:
  bool Has(const std::string& key) const { return values_.count(key) != 0; }
  // Index of the option's last occurrence among all options given; -1 when absent. Decides
  // between two options that undo each other (--cache-prompt / --no-cache-prompt).
  int LastPosition(const std::string& key) const;
  int64_t Int(const std::string& key, int64_t fallback) const;  // kInt and kChoice
  uint64_t UInt(const std::string& key, uint64_t fallback) const;
  double Float(const std::string& key, double fallback) const;
  std::string String(const std::string& key, const std::string& fallback = "") const;
  std::vector<std::string> Strings(const std::string& key) const;  // every occurrence, in order
  std::vector<int> Positions(const std::string& key) const;        // Strings()' positions among all options
  std::vector<int64_t> IntList(const std::string& key, const std::vector<int64_t>& fallback) const;

  std::vector<std::string> positional;  // arguments that are not options ("-" alone is one)

 private:
  friend ParsedArgs ParseCommandLine(const std::string&, int, char**, int);
  struct Occurrence {
    int position;
    std::string text;   // the value as typed (kChoice: the word)
    int64_t number;     // kInt, kChoice
    uint64_t unsigned_number;  // kUInt
    double real;        // kFloat
  };
  std::map<std::string, std::vector<Occurrence>> values_;
  std::map<std::string, std::vector<int64_t>> lists_;  // kIntList, all occurrences joined
};

// True for the commands whose options are in the table ("generate", "chat", "info",
// "tokenize", "bench", "serve").
bool IsCommand(const std::string& name);

// Parses argv[first..argc) for `command` against the table; throws UsageError naming the option
// and the bad value. Checks values only: which options a command requires is its own business.
ParsedArgs ParseCommandLine(const std::string& command, int argc, char** argv, int first);

// The --help text of one command: its usage line, then its options from the table.
std::string CommandHelp(const std::string& command);

// Options read the same way by every command that takes them.
int32_t DeviceOption(const ParsedArgs& a);    // --device: ZF_DEVICE_AUTO unless given
int32_t DraftMaxOption(const ParsedArgs& a);  // --draft-max, else 8 with --lookup or -md, else 0

// generate / chat / info / tokenize: one Options struct. Sampling overrides stay unset unless
// a flag was given, so zf_generate_params_init's defaults apply otherwise.
struct Options {
  std::string command;  // "generate", "chat", "info", "tokenize"
  std::string model;
  std::string prompt;
  std::string system;
  std::string template_file;  // chat: a Jinja chat template to use instead of the model's
  std::string mmproj;               // --mmproj: the model's vision or audio projector
  bool mmproj_found = false;        // mmproj was not given but found beside the model
  std::vector<std::string> images;  // --image FILE, in order
  std::vector<std::string> audios;  // --audio FILE, in order
  struct Media {
    bool audio;        // --audio (else --image)
    std::string path;
  };
  std::vector<Media> media;         // --image and --audio together, in command-line order
  std::vector<std::string> positional;
  std::vector<std::string> stop;
  bool json = false;
  bool no_special = false;
  bool ignore_eos = false;
  bool parse_special = false;
  bool verbose = false;
  bool show_reasoning = true;  // chat --reasoning show|hide
  bool help = false;
  int32_t device = 0;  // ZF_DEVICE_AUTO
  int32_t threads = 0;
  int32_t ctx = 0;
  int32_t kv_type = 1;     // --cache-type-k: ZF_KV_F16
  int32_t kv_type_v = -1;  // --cache-type-v: ZF_KV_SAME (the K type)
  std::optional<int32_t> n_predict, top_k, repeat_last_n;
  std::optional<float> temp, top_p, min_p, repeat_penalty;
  std::optional<uint64_t> seed;
  std::string model_draft;  // -md: a draft model drafts instead of prompt lookup
  int32_t draft_max = 0;  // --lookup / --draft-max / -md: speculative decoding
  int32_t draft_min = 0;
};

// Parses and checks the arguments of generate/chat/info/tokenize. Does not check required
// flags when --help is present, so `zerfoo generate --help` always works.
Options ParseArgs(const std::string& command, int argc, char** argv, int first);

// Strict number parsing: the whole string must be consumed and lie in [lo, hi].
// `what` names the flag in the error message.
int64_t ParseInt(const std::string& what, const std::string& s, int64_t lo, int64_t hi);
uint64_t ParseU64(const std::string& what, const std::string& s);
double ParseFloat(const std::string& what, const std::string& s, double lo, double hi);

}  // namespace cli

#endif  // ZERFOO_CLI_ARGS_H
