// On-demand loads, least-recently-used eviction, idle unloads.
#include "model_registry.h"

#include <sys/stat.h>

#include <cstdio>
#include <functional>

#include "api_error.h"

namespace cli::serve {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

// A request's hold on its model: the model counts it in flight until the last copy goes.
struct Hold {
  std::function<void()> release;
  std::shared_ptr<LoadedModel> model;
  ~Hold() { release(); }
};

}  // namespace

ModelRegistry::ModelRegistry(std::vector<ModelSpec> specs, Limits limits, int32_t (*progress)(void*, int32_t))
    : limits_(limits), progress_(progress) {
  for (ModelSpec& s : specs) {
    auto e = std::make_unique<Entry>();
    e->bytes = FileSize(s.o.model);
    e->spec = std::move(s);
    entries_.push_back(std::move(e));
  }
  reaper_ = std::thread([this] { Reap(); });
}

ModelRegistry::~ModelRegistry() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  reaper_.join();
}

int ModelRegistry::Find(const std::string& name, bool (*match)(const std::string&, const std::string&)) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const std::string& alias = entries_[i]->spec.alias;
    if (match != nullptr ? match(name, alias) : name == alias) return int(i);
  }
  return -1;
}

std::shared_ptr<LoadedModel> ModelRegistry::Use(size_t i) {
  std::unique_lock<std::mutex> lk(mu_);
  Entry& e = *entries_[i];
  for (;;) {
    if (e.state == State::kLoaded) {
      ++e.in_flight;
      e.last_used = ++clock_;
      auto* hold = new Hold{[this, i] { Release(i); }, e.loaded};
      std::shared_ptr<Hold> h(hold);
      return std::shared_ptr<LoadedModel>(h, h->model.get());
    }
    if (stopping_) throw ApiError{503, "server_error", "shutting_down", "the server is shutting down"};
    if (e.state == State::kLoading) {
      const uint64_t load = e.loads;
      cv_.wait(lk, [&] { return e.state != State::kLoading; });
      if (e.state == State::kUnloaded && e.failed_load == load) {
        throw ApiError{500, "server_error", "model_load_failed", "model '" + e.spec.alias + "' failed to load: " + e.error};
      }
      continue;
    }
    if (e.state == State::kUnloading) {
      cv_.wait(lk, [&] { return e.state != State::kUnloading; });
      continue;
    }
    // Unloaded: this request loads it, once there is room.
    if (!MakeRoom(lk, i)) continue;
    e.state = State::kLoading;
    const uint64_t load = ++e.loads;
    const ServeOptions o = e.spec.o;
    lk.unlock();
    std::fprintf(stderr, "zerfoo serve: loading model '%s' from %s\n", e.spec.alias.c_str(), o.model.c_str());
    auto lm = std::make_shared<LoadedModel>(o, &e.metrics);
    std::string why;
    const zf_status st = LoadInto(lm.get(), progress_, &why);
    if (st != ZF_OK) lm.reset();
    lk.lock();
    if (st != ZF_OK) {
      std::fprintf(stderr, "zerfoo serve: model '%s' failed to load: %s\n", e.spec.alias.c_str(), why.c_str());
      e.state = State::kUnloaded;
      e.error = why;
      e.failed_load = load;
      cv_.notify_all();
      throw ApiError{500, "server_error", "model_load_failed", "model '" + e.spec.alias + "' failed to load: " + why};
    }
    e.error.clear();
    if (stopping_) lm->slots.StopAccepting();  // a drain began during the load
    e.loaded = lm;
    e.kind = lm->kind;
    e.bytes = lm->bytes;
    e.idle_since = Clock::now();
    e.state = State::kLoaded;
    if (lm->embed_only) {
      std::fprintf(stderr, "zerfoo serve: model '%s' ready: %s model, /v1/embeddings and /v1/rerank only\n",
                   e.spec.alias.c_str(), lm->kind == kKindRerank ? "rerank" : "embedding");
    } else {
      std::fprintf(stderr, "zerfoo serve: model '%s' ready: %d slot(s), context %d, queue %d\n", e.spec.alias.c_str(),
                   lm->o.parallel, lm->n_ctx, lm->o.queue);
    }
    cv_.notify_all();
  }
}

bool ModelRegistry::MakeRoom(std::unique_lock<std::mutex>& lk, size_t i) {
  Entry& e = *entries_[i];
  for (;;) {
    if (e.state != State::kUnloaded) return false;
    if (stopping_) throw ApiError{503, "server_error", "shutting_down", "the server is shutting down"};
    int n = 0;
    uint64_t bytes = 0;
    int victim = -1;
    for (size_t j = 0; j < entries_.size(); ++j) {
      const Entry& o = *entries_[j];
      if (j == i || o.state == State::kUnloaded) continue;
      ++n;
      bytes += o.bytes;
      if (o.state == State::kLoaded && o.in_flight == 0 &&
          (victim < 0 || o.last_used < entries_[size_t(victim)]->last_used)) {
        victim = int(j);
      }
    }
    const bool over = (limits_.max_loaded > 0 && n >= limits_.max_loaded) ||
                      (limits_.mem_budget > 0 && n > 0 && bytes + e.bytes > limits_.mem_budget);
    if (!over) return true;
    if (victim >= 0) {
      UnloadLocked(lk, size_t(victim), limits_.max_loaded > 0 && n >= limits_.max_loaded ? "--models-max" : "--models-mem");
    } else {
      cv_.wait(lk);  // every model busy (or loading): a request's end, or a load's, makes room
    }
  }
}

void ModelRegistry::UnloadLocked(std::unique_lock<std::mutex>& lk, size_t i, const char* why) {
  Entry& e = *entries_[i];
  e.state = State::kUnloading;
  cv_.wait(lk, [&] { return e.in_flight == 0; });
  std::shared_ptr<LoadedModel> lm = std::move(e.loaded);
  lk.unlock();
  lm.reset();  // the sessions, then the model
  std::fprintf(stderr, "zerfoo serve: unloaded model '%s' (%s)\n", e.spec.alias.c_str(), why);
  lk.lock();
  e.state = State::kUnloaded;
  e.has_keep_alive = false;
  cv_.notify_all();
}

void ModelRegistry::Release(size_t i) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    Entry& e = *entries_[i];
    --e.in_flight;
    e.idle_since = Clock::now();
  }
  cv_.notify_all();
}

bool ModelRegistry::Unload(size_t i) {
  std::unique_lock<std::mutex> lk(mu_);
  Entry& e = *entries_[i];
  cv_.wait(lk, [&] { return e.state != State::kLoading && e.state != State::kUnloading; });
  if (e.state != State::kLoaded) return false;
  UnloadLocked(lk, i, "/models/unload");
  return true;
}

void ModelRegistry::KeepAlive(size_t i, double seconds) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    entries_[i]->has_keep_alive = true;
    entries_[i]->keep_alive = seconds < 0 ? -1 : seconds;
  }
  cv_.notify_all();
}

double ModelRegistry::TtlLocked(const Entry& e) const {
  if (e.has_keep_alive) return e.keep_alive;
  return limits_.sleep_idle > 0 ? double(limits_.sleep_idle) : -1;
}

void ModelRegistry::Reap() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!quit_) {
    cv_.wait_for(lk, std::chrono::milliseconds(200));
    if (quit_ || stopping_) continue;
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = *entries_[i];
      if (e.state != State::kLoaded || e.in_flight > 0) continue;
      const double ttl = TtlLocked(e);
      if (ttl < 0 || std::chrono::duration<double>(now - e.idle_since).count() < ttl) continue;
      UnloadLocked(lk, i, e.has_keep_alive ? "keep_alive" : "--sleep-idle-seconds");
    }
  }
}

std::vector<ModelRegistry::Status> ModelRegistry::List() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<Status> out;
  for (const auto& p : entries_) {
    const Entry& e = *p;
    Status s;
    s.alias = e.spec.alias;
    s.path = e.spec.o.model;
    s.mmproj = e.spec.o.mmproj;
    s.state = e.state == State::kLoaded || e.state == State::kUnloading ? "loaded"
              : e.state == State::kLoading                               ? "loading"
                                                                         : "unloaded";
    s.kind = e.kind;
    s.error = e.error;
    s.loaded = e.loaded;
    s.in_flight = e.in_flight;
    s.metrics = const_cast<ServeMetrics*>(&e.metrics);
    s.keep_alive = TtlLocked(e);
    s.idle_since = e.idle_since;
    out.push_back(std::move(s));
  }
  return out;
}

void ModelRegistry::StopAccepting() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    for (const auto& e : entries_) {
      if (e->loaded) e->loaded->slots.StopAccepting();
    }
  }
  cv_.notify_all();
}

void ModelRegistry::CancelAll() {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& e : entries_) {
    if (e->loaded) e->loaded->slots.CancelAll();
  }
}

}  // namespace cli::serve
