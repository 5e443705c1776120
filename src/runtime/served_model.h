// A served model: everything one loaded model needs to serve sessions — the weights (and their
// forward pool), the batcher that merges concurrent sessions' decode steps, the prefix cache
// shared by every session, the chat templates (formats, marker tokens) and the vocabulary
// constraints compile against. A session created
// from it comes wired to all of them. zf_model is a thin handle around one; a multi-model server
// loads and unloads them. Immutable after Create (its services are thread-safe).
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "model/model.h"
#include "runtime/batcher.h"
#include "runtime/chat_templates.h"
#include "runtime/constraint_vocab.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"

namespace zf::rt {

struct ServeOptions {
  int32_t max_batch = 0;            // > 1: batched decode of up to this many sessions
  int32_t n_threads = 0;            // the batcher's workers (0 = the model's default)
  uint64_t prefix_cache_bytes = 0;  // 0 = no prefix cache
};

class ServedModel {
 public:
  // Takes the loaded model; a batcher the engine cannot run is logged and left out (sessions
  // then decode one at a time). Vocabulary-only models get neither batcher nor cache.
  static Status Create(std::unique_ptr<model::Model> model, const ServeOptions& options,
                       std::unique_ptr<ServedModel>* out);
  ~ServedModel();

  const model::Model& model() const { return *model_; }
  PrefixCache* prefix_cache() const { return prefix_cache_.get(); }
  Batcher* batcher() const { return batcher_.get(); }
  const ChatTemplates& chat() const { return *chat_; }
  const ConstraintVocab& constraint_vocab() const { return *constraint_vocab_; }

  // A session on this model, on its batcher and prefix cache, showing the template's marker
  // tokens in generated text and compiling constraints against the model's vocabulary.
  Status CreateSession(const SessionOptions& options, std::unique_ptr<Session>* out) const;

 private:
  ServedModel() = default;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<ChatTemplates> chat_;
  std::unique_ptr<ConstraintVocab> constraint_vocab_;
  std::unique_ptr<PrefixCache> prefix_cache_;
  std::unique_ptr<Batcher> batcher_;  // after model_: stops before the model goes
};

}  // namespace zf::rt
