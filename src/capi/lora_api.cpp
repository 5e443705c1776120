// C entry points for LoRA adapters: load against a model, describe, apply on a session.
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "model/lora.h"

using zf::capi::Fail;
using zf::capi::Succeed;

static_assert(sizeof(zf_lora_summary) == 16 && offsetof(zf_lora_summary, n_weights) == 12,
              "zf_lora_summary layout is part of the ABI");

// The caller's handle: the adapter (shared with the sessions applying it) and a reference to
// its model, released by zf_lora_free.
struct zf_lora_adapter {
  zf_model* model;
  std::shared_ptr<const zf::model::LoraAdapter> impl;
};

ZF_API zf_status zf_lora_load(zf_model* model, const char* path, zf_lora_adapter** out) {
  if (out != nullptr) *out = nullptr;
  if (model == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "model is NULL");
  if (path == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "path is NULL");
  if (out == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "out is NULL");
  ZF_GUARD_BEGIN
  std::unique_ptr<zf::model::LoraAdapter> a;
  zf::Status st = zf::model::LoraAdapter::Load(*model->impl, path, &a);
  if (!st.ok()) return Fail(st);
  auto h = std::make_unique<zf_lora_adapter>();
  h->model = model;
  h->impl = std::move(a);
  model->refs.fetch_add(1, std::memory_order_relaxed);
  *out = h.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API void zf_lora_free(zf_lora_adapter* adapter) {
  if (adapter == nullptr) return;
  zf_model* m = adapter->model;
  delete adapter;  // sessions applying it hold their own share of impl
  zf::capi::ReleaseModel(m);
}

ZF_API zf_status zf_lora_info(const zf_lora_adapter* adapter, zf_lora_summary* info) {
  if (adapter == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "adapter is NULL");
  if (info == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "info is NULL");
  if (info->struct_size < sizeof(uint32_t)) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "info->struct_size " + std::to_string(info->struct_size) + " is too small");
  }
  zf_lora_summary s;
  s.struct_size = info->struct_size < sizeof s ? info->struct_size : uint32_t(sizeof s);
  s.rank = adapter->impl->rank();
  s.alpha = adapter->impl->alpha();
  s.n_weights = uint32_t(adapter->impl->n_weights());
  std::memcpy(static_cast<void*>(info), &s, s.struct_size);
  return Succeed();
}

ZF_API zf_status zf_session_set_loras(zf_session* session, const zf_lora_adapter* const* adapters,
                                      const float* scales, size_t n) {
  if (session == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "session is NULL");
  if (n > 0 && adapters == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "adapters is NULL but n > 0");
  if (n > 0 && scales == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "scales is NULL but n > 0");
  if (session->active != nullptr) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, session->freed ? "session was freed"
                                                        : "session has a generation or turn in progress; finish or "
                                                          "free it first");
  }
  ZF_GUARD_BEGIN
  std::vector<std::shared_ptr<const zf::model::LoraAdapter>> list;
  std::vector<float> sc;
  for (size_t i = 0; i < n; ++i) {
    const std::string at = "adapters[" + std::to_string(i) + "]";
    if (adapters[i] == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, at + " is NULL");
    if (&adapters[i]->impl->model() != session->model->impl) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, at + " was loaded for another model than the session's");
    }
    if (!std::isfinite(scales[i])) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "scales[" + std::to_string(i) + "] is not finite");
    }
    list.push_back(adapters[i]->impl);
    sc.push_back(scales[i]);
  }
  zf::Status st = session->impl->SetLoras(list, sc);
  return st.ok() ? Succeed() : Fail(st);
  ZF_GUARD_END
}
