// One model as the server holds it while it is loaded: the zf_model, its slots, its context and
// options, and the metrics it counts in (which outlive the load: an unload keeps the counts).
// What Server held for its one model before the server served several (model_registry.h).
#ifndef ZERFOO_CLI_SERVE_LOADED_MODEL_H
#define ZERFOO_CLI_SERVE_LOADED_MODEL_H

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common.h"
#include "image_request.h"
#include "metrics.h"
#include "options.h"
#include "slots.h"
#include "zerfoo.h"

namespace cli::serve {

// What a model is for, once loaded ("" before the first load).
constexpr const char* kKindGenerate = "generate";
constexpr const char* kKindEmbed = "embed";
constexpr const char* kKindRerank = "rerank";

struct LoadedModel {
  LoadedModel(const ServeOptions& opts, ServeMetrics* m) : o(opts), metrics(m), slots(opts.queue) {}

  ServeOptions o;  // its options; o.parallel is the slot count chosen at load
  ServeMetrics* metrics;  // the registry's, for this model
  ModelPtr model;
  zf_model_summary info{};
  int n_ctx = 0;
  bool embed_only = false;  // an encoder: embeddings and rerank only (completions answer 501)
  const char* kind = kKindGenerate;
  uint64_t bytes = 0;  // its file and its slots' full KV: what --models-mem counts
  // --lora / the preset's lora: the adapters (ids in order) and their default scales (POST
  // /lora-adapters sets them; a request's "lora" replaces them for that request).
  struct Lora {
    std::string path;
    std::unique_ptr<zf_lora_adapter, void (*)(zf_lora_adapter*)> adapter{nullptr, &zf_lora_free};
  };
  std::vector<Lora> loras;
  std::mutex lora_mu;
  std::vector<float> lora_scales;  // under lora_mu
  // --mmproj / the directory's projector: images in its chat requests (image_request.h).
  std::unique_ptr<zf_mmproj, void (*)(zf_mmproj*)> mmproj{nullptr, &zf_mmproj_free};
  ImagePolicy images;  // images.mmproj is mmproj.get()
  SlotPool slots;      // after `model`: the sessions go first

  // The longest embedding input / rerank pair: the context, at most the training context.
  int32_t EmbedLimit() const { return info.n_ctx_train > 0 ? std::min<int32_t>(n_ctx, info.n_ctx_train) : n_ctx; }
};

// Loads m->o.model into m->o.parallel slots (0: chosen from the cores and the memory), the draft
// model (-md) beside it. `progress` may cancel the load (zf_model_params.progress). On failure
// *why is the loader's message.
zf_status LoadInto(LoadedModel* m, int32_t (*progress)(void*, int32_t), std::string* why);

// Bytes available for new allocations (MemAvailable), 0 when unknown.
uint64_t AvailableMemory();

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_LOADED_MODEL_H
