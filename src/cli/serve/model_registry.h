// Every model the server can serve (model_list.h), loaded on demand and unloaded by the rules:
// the first request for an unloaded model loads it and the others wait for that one load (a
// failure fails them all with the loader's message; the next request tries again); beyond
// --models-max loaded models or the --models-mem budget the least recently used idle model is
// unloaded first (a model with requests in flight never is: the load waits for one to go idle);
// --sleep-idle-seconds and Ollama's keep_alive unload idle models; POST /models/unload waits for
// the model's running requests. A request holds its model through a ModelRef (front_door.h).
#ifndef ZERFOO_CLI_SERVE_MODEL_REGISTRY_H
#define ZERFOO_CLI_SERVE_MODEL_REGISTRY_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loaded_model.h"
#include "model_list.h"

namespace cli::serve {

class ModelRegistry {
 public:
  struct Limits {
    int max_loaded = 4;       // 0: no limit
    uint64_t mem_budget = 0;  // bytes; 0: no budget
    int sleep_idle = 0;       // seconds; 0: never
  };
  // `progress` is every load's zf_model_params.progress (a signal cancels a load).
  ModelRegistry(std::vector<ModelSpec> specs, Limits limits, int32_t (*progress)(void*, int32_t));
  ~ModelRegistry();

  size_t size() const { return entries_.size(); }
  const std::string& Alias(size_t i) const { return entries_[i]->spec.alias; }
  // The model a name picks: `match` (nullptr: equal names) against each alias; -1 when none.
  int Find(const std::string& name, bool (*match)(const std::string&, const std::string&) = nullptr) const;

  // Model i, loaded, held by the request until the last copy of the pointer goes. Throws
  // ApiError: 500 model_load_failed with the loader's message, 503 when the server drains.
  std::shared_ptr<LoadedModel> Use(size_t i);
  // Unloads model i once its running requests are done; false when it was not loaded.
  bool Unload(size_t i);
  // Ollama's keep_alive for model i, from its latest request: seconds it stays loaded once idle
  // (< 0: for good; 0: unloaded as soon as its requests are done).
  void KeepAlive(size_t i, double seconds);

  struct Status {
    std::string alias, path;
    std::string mmproj;  // its vision projector's file, "" for a text-only model
    const char* state;  // "loaded", "loading", "unloaded"
    const char* kind;   // kKindGenerate / kKindEmbed / kKindRerank; "" before the first load
    std::string error;  // the last load's failure, "" when it loaded
    std::shared_ptr<const LoadedModel> loaded;  // when loaded
    int in_flight = 0;
    ServeMetrics* metrics;
    double keep_alive = -1;  // seconds once idle (< 0: for good)
    std::chrono::steady_clock::time_point idle_since;
  };
  std::vector<Status> List() const;

  // Drain: no more loads, no new requests on the loaded models' slots; then, past the grace
  // period, the running ones cancelled.
  void StopAccepting();
  void CancelAll();

 private:
  enum class State { kUnloaded, kLoading, kLoaded, kUnloading };
  struct Entry {
    ModelSpec spec;
    ServeMetrics metrics;  // kept across loads
    State state = State::kUnloaded;
    std::shared_ptr<LoadedModel> loaded;
    const char* kind = "";
    std::string error;
    uint64_t loads = 0, failed_load = 0;  // load attempts; the one that failed last
    int in_flight = 0;
    uint64_t last_used = 0;
    std::chrono::steady_clock::time_point idle_since;
    bool has_keep_alive = false;
    double keep_alive = -1;
    uint64_t bytes = 0;  // its file until loaded once, then file + KV
  };
  void Release(size_t i);
  // With the lock: until model i can be loaded under the limits (unloading idle models, or
  // waiting for one to go idle); false when model i left kUnloaded meanwhile.
  bool MakeRoom(std::unique_lock<std::mutex>& lk, size_t i);
  // With the lock held on entry and exit: waits for its requests, then frees it.
  void UnloadLocked(std::unique_lock<std::mutex>& lk, size_t i, const char* why);
  double TtlLocked(const Entry& e) const;
  void Reap();

  std::vector<std::unique_ptr<Entry>> entries_;
  const Limits limits_;
  int32_t (*progress_)(void*, int32_t);
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t clock_ = 0;
  bool stopping_ = false;
  bool quit_ = false;
  std::thread reaper_;
};

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_MODEL_REGISTRY_H
