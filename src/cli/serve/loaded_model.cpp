// Loading one model into its slots (moved from Server::Load), and what it is for.
#include "loaded_model.h"

#include "audio_part.h"
#include "image_fetch.h"

#include <cstdlib>

#include <fstream>
#include <memory>
#include <thread>

namespace cli::serve {

namespace {

// A slot's KV at a full context: 16-bit K and V per layer and KV head.
uint64_t SlotKvBytes(const zf_model_summary& info, int n_ctx) {
  const uint64_t head_dim = info.n_head > 0 ? uint64_t(info.n_embd / info.n_head) : 0;
  return uint64_t(n_ctx) * 2 * uint64_t(std::max(info.n_layer, 0)) * uint64_t(std::max(info.n_head_kv, 0)) *
         head_dim * 2;
}

// ... and after it: no more slots than hold a full context each in half the available memory
// (a session commits its KV rows as it fills them).
int SlotsForMemory(const zf_model_summary& info, int n_ctx, int slots) {
  const uint64_t per_slot = SlotKvBytes(info, n_ctx);
  const uint64_t avail = AvailableMemory();
  if (per_slot == 0 || avail == 0) return slots;
  return int(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(slots), avail / 2 / per_slot)));
}

// The loader's message as `zerfoo` prints it: the status, then the library's detail.
zf_status Fail(zf_status st, std::string* why) {
  const char* detail = zf_last_error();
  *why = zf_status_string(st);
  if (detail != nullptr && detail[0] != '\0') *why += std::string(": ") + detail;
  return st;
}

}  // namespace

uint64_t AvailableMemory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kib << 10;
  }
  return 0;
}

zf_status LoadInto(LoadedModel* lm, int32_t (*progress)(void*, int32_t), std::string* why) {
  ServeOptions& o = lm->o;
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.device = o.device;
  mp.n_threads = o.threads;
  mp.prefix_cache_mib = o.prefix_cache_mib;
  mp.progress = progress;
  // Continuous batching: every slot's decode steps coalesced by the library (at most 64 a step).
  const bool auto_slots = o.parallel == 0;
  if (auto_slots) o.parallel = SlotsForCores();
  if (o.batch && o.parallel > 1) mp.max_batch = std::min(o.parallel, 64);
  zf_model* m = nullptr;
  zf_status st = zf_model_load(o.model.c_str(), &mp, &m);
  if (st != ZF_OK) return Fail(st, why);
  lm->model.reset(m);
  lm->info.struct_size = sizeof lm->info;
  st = zf_model_info(m, &lm->info);
  if (st != ZF_OK) return Fail(st, why);
  const zf_model_summary& info = lm->info;
  // The ABI has no getter for a session's context; this mirrors zf_session_params' rule.
  lm->n_ctx = o.ctx > 0 ? o.ctx : std::min(info.n_ctx_train > 0 ? info.n_ctx_train : 4096, 4096);
  if (auto_slots) o.parallel = SlotsForMemory(info, lm->n_ctx, o.parallel);
  // LoRA adapters: FILE[:SCALE] (a suffix that is no number belongs to the path).
  for (const std::string& spec : o.lora) {
    std::string path = spec;
    float scale = 1.0f;
    if (const size_t colon = spec.rfind(':'); colon != std::string::npos) {
      char* end = nullptr;
      const std::string num = spec.substr(colon + 1);
      const float v = std::strtof(num.c_str(), &end);
      if (!num.empty() && end == num.c_str() + num.size()) path = spec.substr(0, colon), scale = v;
    }
    zf_lora_adapter* a = nullptr;
    if ((st = zf_lora_load(m, path.c_str(), &a)) != ZF_OK) {
      Fail(st, why);
      *why = "--lora " + path + ": " + *why;
      return st;
    }
    LoadedModel::Lora l;
    l.path = path;
    l.adapter.reset(a);
    lm->loras.push_back(std::move(l));
    lm->lora_scales.push_back(scale);
  }
  // The vision projector: bound to the model here, so a projector of another model fails the
  // load with the library's reason.
  if (!o.mmproj.empty()) {
    zf_mmproj* p = nullptr;
    if ((st = zf_mmproj_load(m, o.mmproj.c_str(), 0, &p)) != ZF_OK) {
      Fail(st, why);
      *why = "--mmproj " + o.mmproj + ": " + *why;
      return st;
    }
    lm->mmproj.reset(p);
  }
  lm->images.mmproj = lm->mmproj.get();
  lm->images.modalities = ProjectorModalities(lm->mmproj.get());
  lm->images.max_bytes = o.image_max_bytes;
  if (o.allow_image_urls) lm->images.fetch = MakeImageFetcher(o.image_url_timeout);
  // The draft model (-md): one load, a draft session per slot; each slot's session holds a
  // reference, so the handle is dropped once they have theirs.
  ModelPtr draft;
  // Slots that share decode steps verify drafts inside the steps (runtime/batcher.h).
  if (!o.model_draft.empty()) {
    zf_model_params dp;
    zf_model_params_init(&dp, sizeof dp);
    dp.device = o.device;
    dp.n_threads = o.threads;
    zf_model* d = nullptr;
    st = zf_model_load(o.model_draft.c_str(), &dp, &d);
    if (st != ZF_OK) return Fail(st, why);
    draft.reset(d);
  }
  for (int i = 0; i < o.parallel; ++i) {
    zf_session_params sp;
    zf_session_params_init(&sp, sizeof sp);
    sp.n_threads = o.threads;
    sp.n_ctx = lm->n_ctx;
    if (o.fast_prefill) sp.flags |= ZF_SESSION_FAST_PREFILL;
    sp.kv_type = o.kv_type;
    sp.kv_type_v = o.kv_type_v;
    zf_session* s = nullptr;
    st = zf_session_create(m, &sp, &s);
    if (st == ZF_ERR_UNSUPPORTED && i == 0 && (sp.kv_type != ZF_KV_F16 || sp.kv_type_v != ZF_KV_SAME)) {
      // The KV type, not the model, may be what the engine refuses: an encoder also refuses
      // the default type, a generating model only the asked-for one (then say so).
      const std::string kv_why = zf_last_error();
      zf_session_params dp = sp;
      dp.kv_type = ZF_KV_F16;
      dp.kv_type_v = ZF_KV_SAME;
      zf_session* probe = nullptr;
      if (zf_session_create(m, &dp, &probe) == ZF_OK) {
        zf_session_free(probe);
        *why = "--cache-type-k/-v: " + kv_why;
        return st;
      }
    }
    if (st == ZF_ERR_UNSUPPORTED && i == 0) {  // an encoder (BERT): embeddings and rerank only
      lm->embed_only = true;
      // Slots without sessions: embedding requests still take one (--parallel, --queue, drain).
      for (int j = 0; j < o.parallel; ++j) {
        auto slot = std::make_unique<Slot>();
        slot->id = j;
        lm->slots.Add(std::move(slot));
      }
      break;
    }
    if (st != ZF_OK) return Fail(st, why);
    if (draft != nullptr && (st = zf_session_set_draft_model(s, draft.get())) != ZF_OK) {
      zf_session_free(s);
      return Fail(st, why);
    }
    auto slot = std::make_unique<Slot>();
    slot->id = i;
    slot->session.reset(s);
    lm->slots.Add(std::move(slot));
  }
  // An encoder reranks when it has a classification head: one tiny pair tells (the ABI has no
  // getter for the head).
  if (lm->embed_only) {
    const char* doc = "b";
    const size_t len = 1;
    float score = 0;
    lm->kind = zf_rerank(m, nullptr, "a", 1, &doc, &len, 1, &score) == ZF_OK ? kKindRerank : kKindEmbed;
  }
  lm->bytes = info.file_size + (lm->embed_only ? 0 : uint64_t(o.parallel) * SlotKvBytes(info, lm->n_ctx));
  return ZF_OK;
}

}  // namespace cli::serve
