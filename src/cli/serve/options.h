// `zerfoo serve`'s command line: the options it runs with, read from the shared option table
// (../args.h; no HTTP or JSON types).
#ifndef ZERFOO_CLI_SERVE_OPTIONS_H
#define ZERFOO_CLI_SERVE_OPTIONS_H

#include <cstddef>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace cli::serve {

// One -m PATH[=ALIAS].
struct ModelArg {
  std::string path;
  std::string alias;  // "" : the file name without ".gguf"
};

struct ServeOptions {
  std::string model;  // the first -m's path (the default model), "" with only --models-dir / -preset
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 0;  // 0: chosen at load from the cores and memory (AutoSlots, at most 4)
  int ctx = 0;
  int threads = 0;
  int queue = 512;
  int timeout = 15;            // --timeout: seconds a connection may stay silent mid-request
  size_t max_body = size_t(16) << 20;  // --max-body-mb: bytes a request body may have (413)
  int max_inputs = 2048;       // --max-inputs: inputs per embedding request
  int max_documents = 1000;    // --max-documents: documents per rerank request
  int grace = 30;
  int device = ZF_DEVICE_AUTO;
  std::string api_key;
  std::string alias;
  std::string chat_template;  // --chat-template-file: its text, overriding the model's template
  bool verbose = false;
  bool help = false;
  bool cache_prompt = true;   // exact: reuse gives the logits of a full prefill
  bool fast_prefill = false;  // ZF_SESSION_FAST_PREFILL: faster prefill, no exact reuse
  int kv_type = ZF_KV_F16;     // -ctk, else ZERFOO_KV_CACHE_TYPE: zf_session_params.kv_type
  int kv_type_v = ZF_KV_SAME;  // -ctv: zf_session_params.kv_type_v
  int prefix_cache_mib = 0;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]: the model's LoRA adapters, default scales
  int pooling = ZF_POOLING_DEFAULT;  // --pooling: zf_embed_params.pooling of /v1/embeddings
  int n_predict = -1;         // --n-predict: the default and the cap of every request's output tokens
  int draft_max = 0;          // --lookup / -md (8) / --draft-max N: speculative decoding
  std::string model_draft;    // -md FILE: the draft model, shared by the slots (a session each)
  std::vector<std::string> whisper_models;  // --whisper-model FILE[=NAME], repeatable: /v1/audio/*'s models (.bin)
  // Images: --mmproj (this model's projector), --allow-image-urls, --image-max-mb,
  // --image-url-timeout.
  std::string mmproj;
  bool allow_image_urls = false;
  size_t image_max_bytes = size_t(20) << 20;
  int image_url_timeout = 10;
  bool batch = true;  // the slots share decode steps (zf_model_params.max_batch = parallel)
  // Many models (model_list.h, model_registry.h): every -m, --models-dir, --models-preset.
  std::vector<ModelArg> models;  // every -m in order; models[0] is `model` / `alias`
  std::string models_dir;
  std::string models_preset;
  int models_max = 4;        // --models-max: models loaded at once (0 = no limit)
  double models_mem_gib = 0; // --models-mem: their memory budget (0 = MemAvailable at start)
  int sleep_idle = 0;        // --sleep-idle-seconds: unload a model idle this long (0 = never)
};

// --parallel's default: at most this many slots (fewer on fewer cores or little memory).
constexpr int kAutoSlotsMax = 4;
// --parallel's default before a model is loaded: kAutoSlotsMax at most, one per CPU core.
int SlotsForCores();

// The text `zerfoo serve --help` prints (from the option table in ../args.cpp).
std::string ServeHelp();

// Parses argv[first..]; throws UsageError (args.h). Fills the defaults that depend on other
// options: alias = the model's file name without ".gguf" (-m PATH=ALIAS or --alias name the
// first model otherwise). parallel stays 0 unless given (the
// server picks the slots once the model is loaded: kAutoSlotsMax at most).
ServeOptions ParseServeArgs(int argc, char** argv, int first);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_OPTIONS_H
