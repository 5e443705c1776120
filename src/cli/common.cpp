#include "common.h"

#include <cstdio>

#include "progress.h"

namespace cli {

int ReportError(zf_status status) {
  const char* detail = zf_last_error();
  if (detail != nullptr && detail[0] != '\0') {
    std::fprintf(stderr, "zerfoo: error: %s: %s\n", zf_status_string(status), detail);
  } else {
    std::fprintf(stderr, "zerfoo: error: %s\n", zf_status_string(status));
  }
  return kExitRuntime;
}

zf_status LoadModel(const Options& opts, ModelPtr* out) {
  zf_model_params mp;
  zf_status st = zf_model_params_init(&mp, sizeof mp);
  if (st != ZF_OK) return st;
  mp.device = opts.device;
  mp.n_threads = opts.threads;
  ProgressBar bar;
  mp.progress = &ProgressBar::Callback;
  mp.progress_user_data = &bar;
  zf_model* m = nullptr;
  st = zf_model_load(opts.model.c_str(), &mp, &m);
  bar.Finish();
  out->reset(m);
  return st;
}

zf_status CreateSession(const Options& opts, zf_model* model, SessionPtr* out) {
  zf_session_params sp;
  zf_status st = zf_session_params_init(&sp, sizeof sp);
  if (st != ZF_OK) return st;
  sp.n_threads = opts.threads;
  sp.n_ctx = opts.ctx;
  sp.kv_type = opts.kv_type;
  sp.kv_type_v = opts.kv_type_v;
  zf_session* s = nullptr;
  st = zf_session_create(model, &sp, &s);
  out->reset(s);
  return st;
}

zf_generate_params MakeGenerateParams(const Options& opts, std::vector<const char*>* stop_ptrs) {
  zf_generate_params gp;
  zf_generate_params_init(&gp, sizeof gp);  // cannot fail with a valid pointer and size
  if (opts.n_predict) gp.max_tokens = *opts.n_predict;
  if (opts.temp) gp.temperature = *opts.temp;
  if (opts.top_k) gp.top_k = *opts.top_k;
  if (opts.top_p) gp.top_p = *opts.top_p;
  if (opts.min_p) gp.min_p = *opts.min_p;
  if (opts.repeat_penalty) gp.repeat_penalty = *opts.repeat_penalty;
  if (opts.repeat_last_n) gp.repeat_last_n = *opts.repeat_last_n;
  if (opts.seed) gp.seed = *opts.seed;
  if (opts.no_special) gp.flags |= ZF_GENERATE_NO_SPECIAL;
  if (opts.ignore_eos) gp.flags |= ZF_GENERATE_IGNORE_EOS;
  gp.draft_max = opts.draft_max;
  gp.draft_min = opts.draft_min;
  stop_ptrs->clear();
  for (const std::string& s : opts.stop) stop_ptrs->push_back(s.c_str());
  gp.stop = stop_ptrs->empty() ? nullptr : stop_ptrs->data();
  gp.n_stop = stop_ptrs->size();
  return gp;
}

const char* StopReasonName(int32_t reason) {
  switch (reason) {
    case ZF_STOP_EOS: return "eos";
    case ZF_STOP_MAX_TOKENS: return "max_tokens";
    case ZF_STOP_STRING: return "stop_string";
    case ZF_STOP_CALLBACK: return "callback";
    case ZF_STOP_CANCELLED: return "cancelled";
    case ZF_STOP_CONTEXT_FULL: return "context_full";
    default: return "unknown";
  }
}

double TokPerSec(int32_t n, double ms) { return ms > 0.0 ? n * 1000.0 / ms : 0.0; }

void PrintSummary(const zf_generate_result& r) {
  std::fprintf(stderr, "prompt %d tok, generated %d tok, prefill %.1f tok/s, decode %.1f tok/s, stop: %s\n",
               static_cast<int>(r.n_prompt), static_cast<int>(r.n_generated), TokPerSec(r.n_prompt, r.prompt_ms),
               TokPerSec(r.n_generated, r.decode_ms), StopReasonName(r.stop_reason));
  if (r.n_drafted > 0) {
    std::fprintf(stderr, "drafts: %d tok drafted, %d accepted (%.0f%%)\n", static_cast<int>(r.n_drafted),
                 static_cast<int>(r.n_accepted), 100.0 * r.n_accepted / r.n_drafted);
  }
}

bool OpenModelAndSession(const Options& opts, ModelPtr* model, SessionPtr* session) {
  zf_status st = LoadModel(opts, model);
  if (st == ZF_OK) st = CreateSession(opts, model->get(), session);
  if (st == ZF_OK && !opts.model_draft.empty()) {
    // The session keeps its own reference to the draft model.
    Options draft_opts = opts;
    draft_opts.model = opts.model_draft;
    ModelPtr draft;
    st = LoadModel(draft_opts, &draft);
    if (st == ZF_OK) st = zf_session_set_draft_model(session->get(), draft.get());
  }
  if (st != ZF_OK) {
    ReportError(st);
    return false;
  }
  return true;
}

}  // namespace cli
