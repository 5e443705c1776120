// --mmproj, --image and --audio for generate and chat.
#include "media_input.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "audio_decode.h"
#include "common.h"
#include "data_url.h"
#include "json.h"
#include "wav_write.h"

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

bool LoadMediaInputs(const Options& opts, zf_model* model, MmprojPtr* mmproj, std::vector<MediaInput>* media) {
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
  zf_mmproj_summary info{};
  info.struct_size = sizeof info;
  if (zf_mmproj_info(p, &info) != ZF_OK) return false;
  const uint32_t modalities = info.struct_size >= sizeof info ? info.modalities : ZF_MODALITY_IMAGE;
  for (const Options::Media& m : opts.media) {
    const char* flag = m.audio ? "--audio" : "--image";
    if ((modalities & (m.audio ? ZF_MODALITY_AUDIO : ZF_MODALITY_IMAGE)) == 0) {
      std::fprintf(stderr, "zerfoo: error: %s %s: the projector %s (%s) takes %s only\n", flag, m.path.c_str(),
                   opts.mmproj.c_str(), info.projector_type, m.audio ? "images" : "audio");
      return false;
    }
    std::ifstream f(m.path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) bytes.clear();
    if (!f.is_open() || bytes.empty()) {
      std::fprintf(stderr, "zerfoo: error: %s %s: %s\n", flag, m.path.c_str(),
                   f.is_open() ? "the file is empty" : "cannot read the file");
      return false;
    }
    MediaInput in;
    in.audio = m.audio;
    in.path = m.path;
    if (m.audio) {
      std::string why;
      // The library's limit (ZF_AUDIO_MAX_SAMPLES) bounds the decode: a longer clip stops early.
      const zf_status ds = audio::Decode(bytes, &in.pcm, &why, double(ZF_AUDIO_MAX_SAMPLES) / 16000.0);
      if (ds != ZF_OK) {
        std::fprintf(stderr, "zerfoo: error: --audio %s: %s\n", m.path.c_str(), why.c_str());
        return false;
      }
    } else {
      in.bytes = std::move(bytes);
    }
    media->push_back(std::move(in));
  }
  return true;
}

zf_status EvalPromptMedia(const Options& opts, const zf_model* model, zf_session* session, const zf_mmproj* mmproj,
                          const std::vector<MediaInput>& media, std::string* rest) {
  *rest = opts.prompt;
  if (media.empty()) return ZF_OK;
  // The prompt split at the markers; none: every file first (llama-mtmd-cli's rule).
  const std::string marker = kMediaMarker;
  std::vector<std::string> segments;
  size_t start = 0;
  for (size_t at; (at = opts.prompt.find(marker, start)) != std::string::npos; start = at + marker.size()) {
    segments.push_back(opts.prompt.substr(start, at - start));
  }
  segments.push_back(opts.prompt.substr(start));
  if (segments.size() == 1) segments.insert(segments.begin(), media.size(), std::string());
  if (segments.size() - 1 != media.size()) {
    throw UsageError("-p holds " + std::to_string(segments.size() - 1) + " " + marker + " markers but " +
                     std::to_string(media.size()) + " --image/--audio files are given (one marker per file, or none)");
  }
  const uint32_t special = opts.no_special ? 0 : ZF_TOKENIZE_PARSE_SPECIAL;
  for (size_t i = 0; i < media.size(); ++i) {
    std::vector<int32_t> tokens;
    const uint32_t bos = i == 0 && !opts.no_special ? ZF_TOKENIZE_ADD_SPECIAL : 0;
    zf_status st = Tokens(model, segments[i], bos | special, &tokens);
    if (st == ZF_OK && !tokens.empty()) st = zf_session_eval(session, tokens.data(), tokens.size(), nullptr, 0);
    if (st != ZF_OK) return st;
    const MediaInput& m = media[i];
    if (m.audio) {
      st = zf_session_eval_audio(session, mmproj, m.pcm.data(), m.pcm.size(), nullptr, 0);
    } else {
      const zf_image img = EncodedImage(m.bytes);
      st = zf_session_eval_image(session, mmproj, &img, nullptr, 0);
    }
    if (st != ZF_OK) {
      std::fprintf(stderr, "zerfoo: error: %s %s: %s: %s\n", m.audio ? "--audio" : "--image", m.path.c_str(),
                   zf_status_string(st), zf_last_error());
      return st;
    }
  }
  *rest = segments.back();
  return ZF_OK;
}

std::string MediaContentJson(const std::vector<MediaInput>& media, const std::string& text) {
  std::string parts = "[";
  for (const MediaInput& m : media) {
    if (m.audio) {
      const std::string wav = WavFloat16k(m.pcm);
      parts += json::Object()
                   .Str("type", "input_audio")
                   .Raw("input_audio", json::Object()
                                           .Str("data", Base64Encode(wav.data(), wav.size()))
                                           .Str("format", "wav")
                                           .Done())
                   .Done();
    } else {
      // Bytes of no known type go as PNG: the library's decoder then says what is wrong.
      const std::string type = SniffImageType(m.bytes);
      const std::string url = "data:" + (type.empty() ? std::string("image/png") : type) + ";base64," +
                              Base64Encode(m.bytes.data(), m.bytes.size());
      parts += json::Object().Str("type", "image_url").Raw("image_url", json::Object().Str("url", url).Done()).Done();
    }
    parts += ",";
  }
  return parts + json::Object().Str("type", "text").Str("text", text).Done() + "]";
}

}  // namespace cli
