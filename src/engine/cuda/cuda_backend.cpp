// CUDA engine ops. Each op translates host addresses of weights into their device copies and
// calls one kernel-library function on the session's stream. Two fusions happen here, so the
// transformer stays backend-neutral: an in-place RMSNorm followed by RoPE on the same buffer
// (QK-norm) becomes one kernel, and a residual Add followed by the RMSNorm of the same rows
// becomes add_rms_norm. They are implemented by deferring the first op until the next one shows
// whether it can fuse; any other op flushes what is deferred first.
#include "engine/cuda/cuda_backend.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/switches.h"

namespace zf::engine::cuda {
namespace {

// A sequence's F16 KV rows in device memory, one zfk_kv_layer view per layer; freed with the
// cache (the weights' reference keeps the kernel library loaded until then).
class CudaKvCache final : public KvCache {
 public:
  CudaKvCache(std::shared_ptr<const DeviceWeights> w, int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width)
      : KvCache(Device::kCuda, n_layer, n_ctx, k_width, v_width, KvType::kF16, KvType::kF16), w_(std::move(w)) {}
  ~CudaKvCache() override {
    const KernelApi& a = w_->library().api();
    if (k_ != nullptr || v_ != nullptr) a.set_device(w_->device());
    a.free(k_);
    a.free(v_);
  }
  static const CudaKvCache* Of(const KvCache& kv) {
    return kv.device() == Device::kCuda ? static_cast<const CudaKvCache*>(&kv) : nullptr;
  }
  bool Allocate() {
    const KernelApi& a = w_->library().api();
    const size_t k_bytes = size_t(n_layer()) * size_t(n_ctx()) * size_t(k_width()) * 2;
    const size_t v_bytes = size_t(n_layer()) * size_t(n_ctx()) * size_t(v_width()) * 2;
    if (a.set_device(w_->device()) != 0 || a.malloc(&k_, k_bytes == 0 ? 1 : k_bytes) != 0 ||
        a.malloc(&v_, v_bytes == 0 ? 1 : v_bytes) != 0) {
      return false;
    }
    layers_.resize(size_t(n_layer()));
    for (int32_t l = 0; l < n_layer(); ++l) {
      zfk_kv_layer& L = layers_[size_t(l)];
      L.d_k = static_cast<uint16_t*>(k_) + size_t(l) * size_t(n_ctx()) * size_t(k_width());
      L.d_v = static_cast<uint16_t*>(v_) + size_t(l) * size_t(n_ctx()) * size_t(v_width());
      L.n_ctx = n_ctx();
      L.k_width = k_width();
      L.v_width = v_width();
    }
    return true;
  }
  // Layer l's view; nullptr when out of range.
  zfk_kv_layer* Layer(int32_t l) const {
    return l >= 0 && size_t(l) < layers_.size() ? const_cast<zfk_kv_layer*>(&layers_[size_t(l)]) : nullptr;
  }

 private:
  std::shared_ptr<const DeviceWeights> w_;
  void* k_ = nullptr;
  void* v_ = nullptr;
  std::vector<zfk_kv_layer> layers_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::shared_ptr<const DeviceWeights> w)
      : w_(std::move(w)), a_(w_->library().api()), debug_(env::DebugGpu()),
        graphs_(env::CudaGraph()), fuse_(env::CudaFuse()) {}

  ~CudaBackend() override {
    if (stream_ != nullptr) a_.stream_sync(stream_);
    a_.graph_destroy(graph_);
    for (void* p : allocs_) a_.free(p);
    a_.stream_destroy(stream_);
  }

  Status Init() {
    if (a_.set_device(w_->device()) != 0 || a_.stream_create(&stream_) != 0) {
      return Status(Code::kBackend, std::string("cannot create a CUDA stream: ") + a_.last_error());
    }
    return Status::Ok();
  }

  const char* name() const override { return "cuda"; }
  bool Supports(Op op) const override { return cuda::Supports(op); }

  using Backend::CreateKv;
  Status CreateKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type, KvType v_type,
                  std::unique_ptr<KvCache>* out) override {
    out->reset();
    if (k_type != KvType::kF16 || v_type != KvType::kF16) {
      return Unsupported(std::string("the CUDA engine keeps the KV cache in F16 only (asked for K ") + KvTypeName(k_type) +
                         ", V " + KvTypeName(v_type) + "); use the CPU engine for quantized or F32 KV caches");
    }
    std::unique_ptr<CudaKvCache> c(new CudaKvCache(w_, n_layer, n_ctx, k_width, v_width));
    if (!c->Allocate() || !EnsureIdx(n_ctx)) {
      return Status(Code::kOutOfMemory, "cannot allocate the KV cache on the GPU for n_ctx=" + std::to_string(n_ctx) +
                                            ": " + a_.last_error());
    }
    *out = std::move(c);
    return Status::Ok();
  }

  void GetRows(const Tensor& table, const int32_t* ids, int32_t n, float scale, float* out) override {
    Flush();
    const int32_t* d_ids = DevIds(ids, n);
    if (d_ids == nullptr) return;
    Check(a_.get_rows(int32_t(table.type), W(table), table.ne[0], d_ids, n, scale, out, stream_), "get_rows");
  }

  void MatMul(const Tensor& w, const float* x, int32_t n_tok, float* y) override {
    Flush();
    Check(a_.matmul(int32_t(w.type), W(w), w.ne[0], w.ne[1], x, n_tok, y, stream_), "matmul");
  }

  void RmsNorm(const float* x, const float* w, int32_t rows, int32_t n, float eps, float* y) override {
    const float* dw = F(w);
    if (fuse_ && pending_add_.x == x && pending_add_.n == int64_t{rows} * n && a_.add_rms_norm != nullptr) {
      const Add2 add = pending_add_;
      pending_add_ = Add2{};
      FlushNorms();
      Check(a_.add_rms_norm(add.x, add.y, dw, rows, n, eps, y, stream_), "add_rms_norm");
      return;
    }
    bool pending_on_y = false;
    for (const Norm& nm : norms_) pending_on_y = pending_on_y || nm.x == y;
    if (fuse_ && x == y && n <= 512 && pending_add_.x == nullptr && norms_.size() < 2 && !pending_on_y) {
      norms_.push_back(Norm{y, dw, rows, n, eps});  // may fuse into the next Rope on y
      return;
    }
    Flush();
    Check(a_.rms_norm(x, dw, rows, n, eps, y, stream_), "rms_norm");
  }

  void AddBias(float* x, const float* b, int32_t rows, int32_t n) override {
    Flush();
    Check(a_.add_bias(x, F(b), rows, n, stream_), "add_bias");
  }

  void Add(float* x, const float* y, int64_t n) override {
    Flush();
    pending_add_ = Add2{x, y, n};  // may fuse into the next RmsNorm of x
    if (!fuse_) Flush();
  }

  void Rope(float* x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* pos,
            const RopeParams& rp) override {
    if (pending_add_.x != nullptr) Flush();
    zfk_rope_params p{};
    p.n_rot = rp.n_rot;
    p.style = rp.style == RopeStyle::kNorm ? ZFK_ROPE_NORM : ZFK_ROPE_NEOX;
    p.base = rp.base;
    p.freq_scale = rp.freq_scale;
    p.d_freq_factors = rp.freq_factors != nullptr ? F(rp.freq_factors) : nullptr;
    for (size_t i = 0; i < norms_.size(); ++i) {
      const Norm& nm = norms_[i];
      if (nm.x == x && nm.rows == n_tok * n_heads && nm.n == head_dim) {
        p.d_norm_w = nm.w;
        p.norm_eps = nm.eps;
        norms_.erase(norms_.begin() + long(i));
        break;
      }
    }
    bool touches = false;  // an unfusable norm of this buffer must run first
    for (const Norm& nm : norms_) touches = touches || nm.x == x;
    if (touches) Flush();
    const int32_t* d_pos = DevPos(pos, n_tok);
    if (d_pos == nullptr) return;
    Check(a_.rope(x, n_tok, n_heads, head_dim, d_pos, &p, stream_), p.d_norm_w ? "rms_norm+rope" : "rope");
  }

  void GatedActivation(Activation act, float* gate, const float* up, int64_t n) override {
    Flush();
    const int32_t a = act == Activation::kGeluTanh ? ZFK_ACT_GELU_TANH : ZFK_ACT_SILU;
    Check(a_.gated_act(a, gate, up, n, stream_), "gated_act");
  }

  void StoreKv(KvCache& kv, int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) override {
    Flush();
    const int32_t* d_pos = DevPos0(pos0, n_tok);
    zfk_kv_layer* L = KvLayer(kv, layer);
    if (d_pos == nullptr || L == nullptr) return;
    Check(a_.store_kv(L, k, v, n_tok, d_pos, stream_), "store_kv");
  }

  void Attention(const KvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                 const AttentionParams& ap, float* out) override {
    Flush();
    zfk_kv_layer* L = KvLayer(kv, layer);
    if (L == nullptr) return;
    zfk_attn_params p{};
    p.n_head = ap.n_head;
    p.n_head_kv = ap.n_head_kv;
    p.head_dim_k = ap.head_dim_k;
    p.head_dim_v = ap.head_dim_v;
    p.scale = ap.scale;
    p.softcap = ap.softcap;
    p.window = ap.window;
    size_t need = 0;
    if (!Check(a_.attention_workspace(L, &p, &need), "attention_workspace")) return;
    if (need > work_floats_) {
      if (capturing_) return Broken("attention (workspace grows)");
      work_ = static_cast<float*>(Alloc(need * sizeof(float)));
      if (work_ == nullptr) return Fail("attention workspace: " + std::string(a_.last_error()));
      work_floats_ = need;
    }
    const int32_t* d_pos = DevPos0(pos0, n_tok);
    if (d_pos == nullptr) return;
    Check(a_.attention(L, &p, q, n_tok, d_pos, out, work_, stream_), "attention");
  }

  void Softcap(float* x, int64_t n, float cap) override {
    Flush();
    Check(a_.softcap(x, n, cap, stream_), "softcap");
  }

  // ---- memory and steps ----

  float* AllocActivations(size_t n) override { return static_cast<float*>(Alloc(n * sizeof(float))); }
  bool HostActivations() const override { return false; }

  void ReadActivations(const float* src, size_t n, float* host) override {
    Flush();
    if (Check(a_.memcpy_d2h(host, src, n * sizeof(float), stream_), "read activations")) {
      Check(a_.stream_sync(stream_), "stream sync");
    }
  }

  int32_t Argmax(const float* x, int32_t n) override {
    Flush();
    int32_t id = 0;
    if (a_.argmax != nullptr) {
      if (d_argmax_ == nullptr) d_argmax_ = static_cast<int32_t*>(Alloc(sizeof(int32_t)));
      if (d_argmax_ != nullptr && Check(a_.argmax(x, n, d_argmax_, stream_), "argmax") &&
          Check(a_.memcpy_d2h(&id, d_argmax_, sizeof id, stream_), "argmax copy")) {
        Check(a_.stream_sync(stream_), "stream sync");
      }
      return id;
    }
    std::vector<float> host(static_cast<size_t>(n));  // fallback: no argmax kernel in this library
    ReadActivations(x, size_t(n), host.data());
    return Backend::Argmax(host.data(), n);
  }

  bool BeginStep(const KvCache* kv, const int32_t* tokens, int32_t n, int32_t pos0, bool logits) override {
    // The CUDA current device is per host thread, and a session may move between threads.
    if (!Check(a_.set_device(w_->device()), "select the GPU")) return false;
    const uint64_t kv_id = kv != nullptr ? kv->id() : 0;
    if (kv_id != graph_kv_) {  // a recorded decode step writes and reads another sequence's cache
      a_.graph_destroy(graph_);
      graph_ = nullptr;
      warm_decode_ = false;
      graph_kv_ = kv_id;
    }
    step_tokens_ = tokens;
    step_n_ = n;
    step_pos0_ = pos0;
    step_pos_.resize(size_t(n));
    for (int32_t t = 0; t < n; ++t) step_pos_[size_t(t)] = pos0 + t;
    if (!EnsureIdx(n) ||
        !Check(a_.memcpy_h2d(d_tokens_, tokens, size_t(n) * sizeof(int32_t), stream_), "upload token ids") ||
        !Check(a_.memcpy_h2d(d_pos_, step_pos_.data(), size_t(n) * sizeof(int32_t), stream_), "upload positions")) {
      return false;
    }
    const bool decode = n == 1 && logits;
    if (!decode || !graphs_) return false;
    if (graph_ != nullptr) {
      Check(a_.graph_launch(graph_, stream_), "decode graph launch");
      return true;
    }
    // The first decode step runs uncaptured: it sizes every buffer (no allocation may happen
    // inside a capture). The second one is captured.
    if (warm_decode_ && !graph_failed_) {
      if (a_.graph_begin(stream_) == 0) {
        capturing_ = true;
        captured_ops_ = 0;
        broken_.clear();
      } else {
        graph_failed_ = true;
        ZF_LOGW("CUDA graph capture could not start (%s); decoding without graphs", a_.last_error());
      }
    }
    warm_decode_ = true;
    return false;
  }

  bool EndStep() override {
    Flush();
    if (!capturing_) return false;
    capturing_ = false;
    void* g = nullptr;
    int32_t nodes = 0;
    const int32_t st = a_.graph_end(stream_, &g, &nodes);
    if (st == 0 && broken_.empty()) {
      graph_ = g;
      if (debug_) ZF_LOGW("ZF_DEBUG_GPU: decode step captured: %d ops, %d graph nodes", captured_ops_, nodes);
      Check(a_.graph_launch(graph_, stream_), "decode graph launch");
      return false;
    }
    a_.graph_destroy(g);
    graph_failed_ = true;
    const std::string why = !broken_.empty() ? "op " + broken_ : std::string(a_.last_error());
    ZF_LOGW("CUDA graph capture of the decode step failed after %d ops (%s); running it uncaptured, "
            "and decoding without graphs from now on", captured_ops_, why.c_str());
    return true;  // nothing ran: the caller issues the ops again, uncaptured
  }

  Status TakeError() override {
    Status s = error_;
    error_ = Status::Ok();
    return s;
  }

 private:
  struct Norm {
    float* x;
    const float* w;
    int32_t rows, n;
    float eps;
  };
  struct Add2 {
    float* x = nullptr;
    const float* y = nullptr;
    int64_t n = 0;
  };

  // Runs the deferred ops in the order they were issued (norms never overlap the add's buffer).
  void Flush() {
    if (pending_add_.x != nullptr) {
      const Add2 add = pending_add_;
      pending_add_ = Add2{};
      Check(a_.add(add.x, add.y, add.n, stream_), "add");
    }
    FlushNorms();
  }
  void FlushNorms() {
    std::vector<Norm> norms;
    norms.swap(norms_);
    for (const Norm& nm : norms) Check(a_.rms_norm(nm.x, nm.w, nm.rows, nm.n, nm.eps, nm.x, stream_), "rms_norm");
  }

  // True on success. While capturing, a failure marks the capture broken (the step is re-run
  // uncaptured); otherwise the first failure is kept for TakeError.
  bool Check(int32_t status, const char* op) {
    if (capturing_) {
      ++captured_ops_;
      if (debug_) ZF_LOGW("ZF_DEBUG_GPU: capture op %d: %s%s", captured_ops_, op, status != 0 ? " (FAILED)" : "");
      if (status != 0 && broken_.empty()) broken_ = std::string(op) + ": " + a_.last_error();
      return status == 0;
    }
    if (status != 0) Fail(std::string(op) + ": " + a_.last_error());
    return status == 0;
  }
  void Fail(const std::string& msg) {
    if (error_.ok()) error_ = Status(Code::kBackend, "CUDA engine: " + msg);
  }
  void Broken(const char* why) {
    if (broken_.empty()) broken_ = why;
  }

  void* Alloc(size_t bytes) {
    void* p = nullptr;
    if (capturing_) {
      Broken("allocation");
      return nullptr;
    }
    if (a_.malloc(&p, bytes) != 0) return nullptr;
    allocs_.push_back(p);
    return p;
  }

  // Token id / position staging on the device, grown outside captures only.
  bool EnsureIdx(int32_t n) {
    if (n <= idx_cap_) return true;
    auto* t = static_cast<int32_t*>(Alloc(size_t(n) * sizeof(int32_t)));
    auto* p = static_cast<int32_t*>(Alloc(size_t(n) * sizeof(int32_t)));
    if (t == nullptr || p == nullptr) {
      Fail("cannot allocate index buffers");
      return false;
    }
    d_tokens_ = t;
    d_pos_ = p;
    idx_cap_ = n;
    return true;
  }

  // Device copies of ids/positions: the step's uploaded ones when they are the same (always the
  // case inside Forward::Run, so a captured graph reads them from the device), else uploaded now.
  const int32_t* DevIds(const int32_t* ids, int32_t n) {
    if (ids == step_tokens_ && n == step_n_) return d_tokens_;
    step_tokens_ = nullptr;  // d_tokens_ no longer holds the step's ids
    return Upload(d_tokens_, ids, n, "upload ids") ? d_tokens_ : nullptr;
  }
  const int32_t* DevPos(const int32_t* pos, int32_t n) {
    if (n == step_n_ && pos[0] == step_pos0_ && pos[n - 1] == step_pos0_ + n - 1) return d_pos_;
    step_n_ = -1;  // d_pos_ no longer holds consecutive positions from step_pos0_
    return Upload(d_pos_, pos, n, "upload positions") ? d_pos_ : nullptr;
  }
  const int32_t* DevPos0(int32_t pos0, int32_t n) {
    if (n == step_n_ && pos0 == step_pos0_) return d_pos_;
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int32_t t = 0; t < n; ++t) pos[size_t(t)] = pos0 + t;
    if (!Upload(d_pos_, pos.data(), n, "upload positions")) return nullptr;
    step_n_ = n, step_pos0_ = pos0;
    return d_pos_;
  }
  bool Upload(int32_t*& dst, const int32_t* host, int32_t n, const char* what) {
    if (capturing_) {
      Broken(what);
      return false;
    }
    return EnsureIdx(n) && Check(a_.memcpy_h2d(dst, host, size_t(n) * sizeof(int32_t), stream_), what) &&
           Check(a_.stream_sync(stream_), what);  // `host` may be a temporary
  }

  zfk_kv_layer* KvLayer(const KvCache& kv, int32_t layer) {
    const CudaKvCache* c = CudaKvCache::Of(kv);
    zfk_kv_layer* L = c != nullptr ? c->Layer(layer) : nullptr;
    if (L == nullptr) Fail("KV cache layer " + std::to_string(layer) + " out of range (not a CUDA cache?)");
    return L;
  }

  const void* W(const Tensor& t) {
    const void* d = w_->Find(t.data);
    if (d == nullptr) Fail("tensor '" + std::string(t.name) + "' is not on the GPU");
    return d;
  }
  const float* F(const float* host) {
    const void* d = w_->Find(host);
    if (d == nullptr) Fail("a norm/bias/rope vector is not on the GPU");
    return static_cast<const float*>(d);
  }

  std::shared_ptr<const DeviceWeights> w_;
  const KernelApi& a_;
  const bool debug_, graphs_, fuse_;
  void* stream_ = nullptr;
  std::vector<void*> allocs_;
  float* work_ = nullptr;  // attention split-K partials
  size_t work_floats_ = 0;
  int32_t* d_tokens_ = nullptr;
  int32_t* d_pos_ = nullptr;
  int32_t idx_cap_ = 0;
  int32_t* d_argmax_ = nullptr;
  // The current step as uploaded (host pointers are compared, values live on the device).
  const int32_t* step_tokens_ = nullptr;
  int32_t step_n_ = -1, step_pos0_ = -1;
  std::vector<int32_t> step_pos_;
  // Deferred ops (see the file comment).
  Add2 pending_add_;
  std::vector<Norm> norms_;
  // Decode graph.
  void* graph_ = nullptr;
  uint64_t graph_kv_ = 0;  // KvCache::id() of the cache the graph was recorded on
  bool warm_decode_ = false, capturing_ = false, graph_failed_ = false;
  int32_t captured_ops_ = 0;
  std::string broken_;
  Status error_;
};

}  // namespace

// The kernel library has none of the optional ops yet: models needing one run on the CPU.
bool Supports(Op) { return false; }

Status CreateCudaBackend(std::shared_ptr<const DeviceWeights> weights, std::unique_ptr<Backend>* out) {
  out->reset();
  std::unique_ptr<CudaBackend> b(new CudaBackend(std::move(weights)));
  ZF_RETURN_IF_ERROR(b->Init());
  *out = std::move(b);
  return Status::Ok();
}

}  // namespace zf::engine::cuda
