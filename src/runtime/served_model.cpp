#include "runtime/served_model.h"

#include "common/log.h"

namespace zf::rt {

Status ServedModel::Create(std::unique_ptr<model::Model> model, const ServeOptions& options,
                           std::unique_ptr<ServedModel>* out) {
  std::unique_ptr<ServedModel> m(new ServedModel());
  m->model_ = std::move(model);
  m->chat_.reset(new ChatTemplates(*m->model_));
  m->constraint_vocab_.reset(new ConstraintVocab(*m->model_));
  if (options.max_batch > 1 && !m->model_->vocab_only()) {
    Status s = Batcher::Create(*m->model_, options.max_batch, options.n_threads, &m->batcher_);
    if (s.code() == Code::kUnsupported) {
      ZF_LOGW("%s; sessions decode one at a time", s.message().c_str());
    } else if (!s.ok()) {
      return s;
    }
  }
  if (options.prefix_cache_bytes > 0 && !m->model_->vocab_only()) {
    m->prefix_cache_.reset(new PrefixCache(options.prefix_cache_bytes));
  }
  *out = std::move(m);
  return Status::Ok();
}

ServedModel::~ServedModel() {
  batcher_.reset();  // its worker runs on the model: stopped first
}

Status ServedModel::CreateSession(const SessionOptions& options, std::unique_ptr<Session>* out) const {
  std::unique_ptr<Session> s;
  ZF_RETURN_IF_ERROR(Session::Create(*model_, options, &s));
  s->set_batcher(batcher_.get());
  s->set_prefix_cache(prefix_cache_.get());
  s->set_shown_tokens(&chat_->MarkerTokens());
  s->set_constraint_vocab(constraint_vocab_.get());
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace zf::rt
