// The router routes of `zerfoo serve` (llama-server's router mode): GET /v1/models (and
// /models) lists every model the server can serve with its status and kind; POST /models/load
// and /models/unload {"model": NAME} load and unload one.
#include <string>

#include "model_text.h"
#include "server.h"

namespace cli::serve {

namespace {

// The "model" of a /models/load or /models/unload body; throws a 400 naming the field.
std::string ModelField(const std::string& text) {
  const json body = ParseObject(text);
  const auto it = body.find("model");
  if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    throw BadRequest("missing_field", "'model' must name a model of this server");
  }
  return it->get<std::string>();
}

// What a model takes besides text (llama-server's "modalities"): its loaded projector's types;
// before it loads, a projector file counts as a vision one (its type is read when it loads).
json Modalities(const ModelRegistry::Status& s) {
  if (s.mmproj.empty()) return {{"vision", false}, {"audio", false}};
  const uint32_t m = s.loaded ? s.loaded->images.modalities : ZF_MODALITY_IMAGE;
  return {{"vision", (m & ZF_MODALITY_IMAGE) != 0}, {"audio", (m & ZF_MODALITY_AUDIO) != 0}};
}

}  // namespace

void Server::ModelRoutes() {
  for (const char* path : {"/v1/models", "/models"}) {
    Get(path, [this](const httplib::Request& req, httplib::Response& res) {
      if (!Authorized(req, res, ErrorBody)) return;
      json data = json::array();
      for (const ModelRegistry::Status& s : models_->List()) {
        json m = {{"id", s.alias}, {"object", "model"}, {"created", 0}, {"owned_by", "zerfoo"}, {"path", s.path}};
        json status = {{"value", s.state}};
        if (!s.error.empty()) status["failed"] = true, status["error"] = s.error;
        m["status"] = status;
        m["kind"] = *s.kind != '\0' ? s.kind : "unknown";
        // What it takes besides text (llama-server's /props "modalities"; "multimodal" among
        // the capabilities as llama-server lists a model with a projector).
        m["modalities"] = Modalities(s);
        m["capabilities"] = s.mmproj.empty() ? json::array({"completion"}) : json::array({"completion", "multimodal"});
        if (!s.mmproj.empty()) m["mmproj"] = s.mmproj;
        if (const auto& lm = s.loaded) {
          m["meta"] = {{"n_ctx", lm->n_ctx},
                       {"n_ctx_train", lm->info.n_ctx_train},
                       {"n_vocab", lm->info.n_vocab},
                       {"n_params", lm->info.n_params},
                       {"architecture", lm->info.architecture},
                       {"slots", lm->o.parallel}};
        }
        data.push_back(m);
      }
      // The speech models of /v1/audio/* (kind "speech"), loaded on first use.
      for (const SpeechModels::Entry& e : speech_ ? speech_->List() : std::vector<SpeechModels::Entry>{}) {
        json status = {{"value", e.model ? "loaded" : "unloaded"}};
        if (!e.error.empty()) status["failed"] = true, status["error"] = e.error;
        data.push_back({{"id", e.name}, {"object", "model"}, {"created", 0}, {"owned_by", "zerfoo"}, {"path", e.path},
                        {"status", status}, {"kind", "speech"}});
      }
      res.set_content(Dump(json{{"object", "list"}, {"data", data}}), "application/json");
    });
  }
  // llama-server's /props of a model (?model=NAME, else the default): its file and modalities
  // (Modalities); once loaded also its slots, context and chat template.
  Get("/props", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res, ErrorBody)) return;
    const std::string name = req.get_param_value("model");
    const std::vector<ModelRegistry::Status> all = models_->List();
    for (const ModelRegistry::Status& s : all) {
      if (name.empty() ? &s != &all[0] : s.alias != name) continue;
      json props = {{"model_alias", s.alias},
                    {"model_path", s.path},
                    {"modalities", Modalities(s)}};
      if (const auto& lm = s.loaded) {
        props["total_slots"] = lm->o.parallel;
        props["default_generation_settings"] = {{"n_ctx", lm->n_ctx}};
        props["chat_template"] =
            lm->o.chat_template.empty() ? Meta(lm->model.get(), "tokenizer.chat_template") : lm->o.chat_template;
      }
      res.set_content(Dump(props), "application/json");
      return;
    }
    SendError(res, {404, "invalid_request_error", "model_not_found", "model '" + name + "' not found"});
  });
  // Load: answers once the model is loaded (or failed: 500 with the loader's message).
  Post("/models/load", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res, ErrorBody)) return;
    try {
      const std::string name = ModelField(req.body);
      const int i = models_->Find(name);
      if (i < 0) throw ApiError{404, "invalid_request_error", "model_not_found", "model '" + name + "' not found"};
      models_->Use(size_t(i));  // loaded, then let go at once
      res.set_content(Dump(json{{"success", true}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
  // Unload: waits for the model's running requests, then frees it.
  Post("/models/unload", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res, ErrorBody)) return;
    try {
      const std::string name = ModelField(req.body);
      const int i = models_->Find(name);
      if (i < 0) throw ApiError{404, "invalid_request_error", "model_not_found", "model '" + name + "' not found"};
      if (!models_->Unload(size_t(i))) throw BadRequest("model_not_loaded", "model '" + name + "' is not loaded");
      res.set_content(Dump(json{{"success", true}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
}

}  // namespace cli::serve
