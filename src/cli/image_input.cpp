// --mmproj and --image for generate and chat.
#include "image_input.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "common.h"
#include "data_url.h"
#include "json.h"

namespace cli {

namespace {

zf_image EncodedImage(const std::string& bytes) {
  zf_image img{};
  img.struct_size = sizeof img;
  img.format = ZF_IMAGE_ENCODED;
  img.data = bytes.data();
  img.size = bytes.size();
  return img;
}

// The tokens of one text segment (special-token text as tokens unless --no-special; BOS only
// at the very start).
zf_status Tokens(const zf_model* model, const std::string& text, uint32_t flags, std::vector<int32_t>* out) {
  size_t n = 0;
  out->assign(text.size() + 8, 0);
  zf_status st = zf_tokenize(model, text.data(), text.size(), flags, out->data(), out->size(), &n);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    out->assign(n, 0);
    st = zf_tokenize(model, text.data(), text.size(), flags, out->data(), out->size(), &n);
  }
  out->resize(st == ZF_OK ? n : 0);
  return st;
}

}  // namespace

bool LoadImageInputs(const Options& opts, zf_model* model, MmprojPtr* mmproj, std::vector<std::string>* images) {
  if (opts.mmproj.empty()) return true;
  zf_mmproj* p = nullptr;
  const zf_status st = zf_mmproj_load(model, opts.mmproj.c_str(), 0, &p);
  if (st != ZF_OK) {
    std::fprintf(stderr, "zerfoo: error: --mmproj %s: %s: %s\n", opts.mmproj.c_str(), zf_status_string(st),
                 zf_last_error());
    return false;
  }
  mmproj->reset(p);
  if (opts.mmproj_found) std::fprintf(stderr, "zerfoo: projector %s (found beside the model)\n", opts.mmproj.c_str());
  for (const std::string& path : opts.images) {
    std::ifstream f(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) bytes.clear();
    if (!f.is_open() || bytes.empty()) {
      std::fprintf(stderr, "zerfoo: error: --image %s: %s\n", path.c_str(),
                   f.is_open() ? "the file is empty" : "cannot read the file");
      return false;
    }
    images->push_back(std::move(bytes));
  }
  return true;
}

zf_status EvalPromptImages(const Options& opts, const zf_model* model, zf_session* session, const zf_mmproj* mmproj,
                           const std::vector<std::string>& images, std::string* rest) {
  *rest = opts.prompt;
  if (images.empty()) return ZF_OK;
  // The prompt split at the markers; none: every image first (llama-mtmd-cli's rule).
  const std::string marker = kMediaMarker;
  std::vector<std::string> segments;
  size_t start = 0;
  for (size_t at; (at = opts.prompt.find(marker, start)) != std::string::npos; start = at + marker.size()) {
    segments.push_back(opts.prompt.substr(start, at - start));
  }
  segments.push_back(opts.prompt.substr(start));
  if (segments.size() == 1) segments.insert(segments.begin(), images.size(), std::string());
  if (segments.size() - 1 != images.size()) {
    throw UsageError("-p holds " + std::to_string(segments.size() - 1) + " " + marker + " markers but " +
                     std::to_string(images.size()) + " --image files are given (one marker per image, or none)");
  }
  const uint32_t special = opts.no_special ? 0 : ZF_TOKENIZE_PARSE_SPECIAL;
  for (size_t i = 0; i < images.size(); ++i) {
    std::vector<int32_t> tokens;
    const uint32_t bos = i == 0 && !opts.no_special ? ZF_TOKENIZE_ADD_SPECIAL : 0;
    zf_status st = Tokens(model, segments[i], bos | special, &tokens);
    if (st == ZF_OK && !tokens.empty()) st = zf_session_eval(session, tokens.data(), tokens.size(), nullptr, 0);
    if (st != ZF_OK) return st;
    const zf_image img = EncodedImage(images[i]);
    if ((st = zf_session_eval_image(session, mmproj, &img, nullptr, 0)) != ZF_OK) {
      std::fprintf(stderr, "zerfoo: error: --image %s: %s: %s\n", opts.images[i].c_str(), zf_status_string(st),
                   zf_last_error());
      return st;
    }
  }
  *rest = segments.back();
  return ZF_OK;
}

std::string ImageContentJson(const std::vector<std::string>& images, const std::string& text) {
  std::string parts = "[";
  for (const std::string& bytes : images) {
    // Bytes of no known type go as PNG: the library's decoder then says what is wrong.
    const std::string type = SniffImageType(bytes);
    const std::string url =
        "data:" + (type.empty() ? std::string("image/png") : type) + ";base64," + Base64Encode(bytes.data(), bytes.size());
    parts += json::Object().Str("type", "image_url").Raw("image_url", json::Object().Str("url", url).Done()).Done();
    parts += ",";
  }
  return parts + json::Object().Str("type", "text").Str("text", text).Done() + "]";
}

}  // namespace cli
