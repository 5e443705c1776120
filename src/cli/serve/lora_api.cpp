// GET/POST /lora-adapters over the picked model's adapters (loaded_model.h).
#include "lora_api.h"

#include <cmath>
#include <mutex>

#include "loaded_model.h"

namespace cli::serve {

namespace {

json List(LoadedModel& m) {
  std::lock_guard<std::mutex> lock(m.lora_mu);
  json out = json::array();
  for (size_t i = 0; i < m.loras.size(); ++i) {
    zf_lora_summary info;
    info.struct_size = sizeof info;
    json e = {{"id", i}, {"path", m.loras[i].path}, {"scale", m.lora_scales[i]}};
    if (zf_lora_info(m.loras[i].adapter.get(), &info) == ZF_OK) {
      e["rank"] = info.rank;
      e["alpha"] = info.alpha;
    }
    out.push_back(std::move(e));
  }
  return out;
}

// [{"id", "scale"}] -> every adapter's scale (unlisted: 0, as llama-server sets them).
std::vector<float> Scales(const std::string& body, size_t n) {
  json a = json::parse(body, nullptr, false);
  if (!a.is_array()) throw BadRequest("invalid_json", "the body must be an array of {\"id\", \"scale\"}");
  std::vector<float> scales(n, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    const json& e = a[i];
    if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() ||
        (e.contains("scale") && !e["scale"].is_number())) {
      throw BadRequest("invalid_type", at + " must be {\"id\": integer, \"scale\": number}");
    }
    const int64_t id = e["id"].get<int64_t>();
    if (id < 0 || uint64_t(id) >= n) {
      throw BadRequest("invalid_value", at + ".id = " + std::to_string(id) + " is not an adapter of this model (it has " +
                                            std::to_string(n) + ")");
    }
    const double s = e.value("scale", 0.0);
    if (!std::isfinite(s) || std::fabs(s) > 1e6) throw BadRequest("invalid_value", at + ".scale must be a finite number");
    scales[size_t(id)] = float(s);
  }
  return scales;
}

}  // namespace

void AddLoraRoutes(FrontDoor& door) {
  door.Get("/lora-adapters", [&door](const httplib::Request& req, httplib::Response& res) {
    const ModelRef m = door.Admit(req, res, ErrorBody, false);
    if (m == nullptr) return;
    res.set_content(Dump(List(*m)), "application/json");
  });
  door.Post("/lora-adapters", ErrorBody, [&door](const httplib::Request& req, httplib::Response& res) {
    const ModelRef m = door.Admit(req, res, ErrorBody, false);
    if (m == nullptr) return;
    try {
      std::vector<float> scales = Scales(req.body, m->loras.size());
      std::lock_guard<std::mutex> lock(m->lora_mu);
      m->lora_scales = std::move(scales);
    } catch (const ApiError& e) {
      door.CountError(m);
      SendError(res, e);
      return;
    }
    res.set_content("{\"success\":true}", "application/json");
  });
}

}  // namespace cli::serve
