// `zerfoo serve`'s command line: the options and their parser (flags and usage text only, no
// HTTP or JSON types).
#ifndef ZERFOO_CLI_SERVE_OPTIONS_H
#define ZERFOO_CLI_SERVE_OPTIONS_H

#include <string>

#include "zerfoo.h"

namespace cli::serve {

struct ServeOptions {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  int ctx = 0;
  int threads = 0;
  int queue = -1;  // -1: 4 * parallel
  int grace = 30;
  int device = ZF_DEVICE_AUTO;
  std::string api_key;
  std::string alias;
  std::string chat_template;  // --chat-template-file: its text, overriding the model's template
  bool verbose = false;
  bool help = false;
  bool cache_prompt = true;   // exact: reuse gives the logits of a full prefill
  bool fast_prefill = false;  // ZF_SESSION_FAST_PREFILL: faster prefill, no exact reuse
  int prefix_cache_mib = 0;
  int draft_max = 0;          // --lookup / -md (8) / --draft-max N: speculative decoding
  std::string model_draft;    // -md FILE: the draft model, shared by the slots (a session each)
  bool batch = true;  // the slots share decode steps (zf_model_params.max_batch = parallel)
};

// The text `zerfoo serve --help` prints.
extern const char kServeHelp[];

// Parses argv[first..]; throws UsageError (args.h). Fills the defaults that depend on other
// options: queue = 4 * parallel, alias = the model's file name without ".gguf".
ServeOptions ParseServeArgs(int argc, char** argv, int first);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_OPTIONS_H
