// Image parts of chat requests into the data: URLs the library's chat turn takes.
#include "image_request.h"

#include <cctype>

#include "../data_url.h"

namespace cli::serve {

namespace {

ApiError TooLarge(const std::string& field, size_t bytes, size_t max_bytes) {
  return {413, "invalid_request_error", "image_too_large",
          "'" + field + "': the image has " + std::to_string(bytes) + " bytes; this server takes at most " +
              std::to_string(max_bytes) + " bytes per image (--image-max-mb)"};
}

// Whether `url` starts with the lowercase `scheme` in any case (URL schemes are case-insensitive).
bool HasScheme(const std::string& url, const std::string& scheme) {
  if (url.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
  }
  return true;
}

// One image part's URL (string or {"url"}) as a data: URL.
std::string ResolveUrl(const std::string& url, const std::string& field, const ImagePolicy& policy) {
  if (HasScheme(url, "http://") || HasScheme(url, "https://")) {
    if (!policy.fetch) {
      throw BadRequest("unsupported", "'" + field +
                                          "': http(s) image URLs are not fetched by this server; send the image as a "
                                          "data: URL (\"data:image/png;base64,...\"), or start it with --allow-image-urls");
    }
    return ImageDataUrl(policy.fetch(url, field, policy.max_bytes), field, policy.max_bytes);
  }
  std::string type, b64, why;
  if (HasScheme(url, "data:")) {
    if (!ParseDataUrl(url, &type, &b64, &why)) throw BadRequest("invalid_value", "'" + field + "': " + why);
    if (!type.empty() && type.compare(0, 6, "image/") != 0) {
      throw BadRequest("invalid_value", "'" + field + "': the data: URL's type is '" + type + "', not an image");
    }
  } else {
    b64 = url;  // plain base64, as Ollama and some OpenAI clients send it
  }
  if (b64.empty()) throw BadRequest("invalid_value", "'" + field + "': the image is empty");
  // The size from the length first: a huge image is refused before it is decoded.
  if (const size_t n = Base64DecodedSize(b64); n > policy.max_bytes) throw TooLarge(field, n, policy.max_bytes);
  std::string bytes;
  if (!Base64Decode(b64, &bytes, &why)) {
    throw BadRequest("invalid_value", "'" + field + "': " + why + " (expected a data: URL or base64 image bytes)");
  }
  return ImageDataUrl(bytes, field, policy.max_bytes);
}

ApiError NoProjector(const std::string& field, const std::string& model) {
  return BadRequest("unsupported", "'" + field + "': images need a vision model; model '" + model +
                                       "' has no projector (serve it with --mmproj FILE)");
}

}  // namespace

json ImagePart(const std::string& url, const std::string& field, const std::string& model, const ImagePolicy& policy) {
  if (policy.mmproj == nullptr) throw NoProjector(field, model);
  if ((policy.modalities & ZF_MODALITY_IMAGE) == 0) {
    throw BadRequest("unsupported", "'" + field + "': images need a vision model; model '" + model +
                                        "' has an audio projector (it takes input_audio parts)");
  }
  return {{"type", "image_url"}, {"image_url", {{"url", ResolveUrl(url, field, policy)}}}};
}

int32_t ImageTokens(const zf_mmproj* mmproj) {
  zf_mmproj_summary info{};
  info.struct_size = sizeof info;
  return mmproj != nullptr && zf_mmproj_info(mmproj, &info) == ZF_OK ? info.n_tokens : 0;
}

std::string ImageDataUrl(const std::string& bytes, const std::string& field, size_t max_bytes) {
  if (bytes.empty()) throw BadRequest("invalid_value", "'" + field + "': the image is empty");
  if (bytes.size() > max_bytes) throw TooLarge(field, bytes.size(), max_bytes);
  const std::string type = SniffImageType(bytes);
  if (type == "image/webp") {
    throw BadRequest("invalid_value", "'" + field + "': WebP images are not supported; send PNG, JPEG, GIF or BMP");
  }
  if (type.empty()) {
    throw BadRequest("invalid_value", "'" + field + "': the bytes are not a PNG, JPEG, GIF or BMP image");
  }
  return "data:" + type + ";base64," + Base64Encode(bytes.data(), bytes.size());
}

int ResolveImages(json* messages, const std::string& model, const ImagePolicy& policy) {
  if (messages == nullptr || !messages->is_array()) return 0;
  int n = 0;
  for (size_t i = 0; i < messages->size(); ++i) {
    json& m = (*messages)[i];
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    json& parts = m["content"];
    for (size_t j = 0; j < parts.size(); ++j) {
      json& p = parts[j];
      if (!p.is_object() || !p.contains("type") || p["type"] != "image_url") continue;
      const std::string field = "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]";
      if (policy.mmproj == nullptr) throw NoProjector(field, model);
      const json* iu = p.contains("image_url") ? &p["image_url"] : nullptr;
      const json* url = iu == nullptr              ? nullptr
                        : iu->is_string()          ? iu
                        : iu->is_object() && iu->contains("url") ? &(*iu)["url"]
                                                                 : nullptr;
      if (url == nullptr) {
        throw BadRequest("missing_field", "'" + field + ".image_url.url' is required");
      }
      if (!url->is_string()) throw BadRequest("invalid_type", "'" + field + ".image_url.url' must be a string");
      p = ImagePart(url->get<std::string>(), field + ".image_url.url", model, policy);
      ++n;
    }
  }
  return n;
}

}  // namespace cli::serve
