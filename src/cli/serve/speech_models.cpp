// The server's named Whisper models, loaded on first use (or at startup when given by flag).
#include "speech_models.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "../args.h"
#include "api_error.h"

namespace cli::serve {

namespace {

bool EndsWith(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// whisper.cpp's ggml .bin: the magic 0x67676d6c little-endian ("lmgg" on disk).
bool IsWhisperBin(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char magic[4] = {};
  const bool ok = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "lmgg", 4) == 0;
  std::fclose(f);
  return ok;
}

struct SpeechDeleter {
  void operator()(const zf_speech_model* m) const { zf_speech_free(const_cast<zf_speech_model*>(m)); }
};

}  // namespace

std::pair<std::string, std::string> SpeechModelSpec(const std::string& v) {
  // FILE[=NAME] as -m: the text after the last '=' names the model unless it has a '/'.
  const size_t eq = v.rfind('=');
  if (eq != std::string::npos && eq > 0 && v.find('/', eq) == std::string::npos) {
    if (eq + 1 == v.size()) throw UsageError("--whisper-model '" + v + "': the name after '=' is empty");
    return {v.substr(eq + 1), v.substr(0, eq)};
  }
  std::string name = v.substr(v.find_last_of('/') + 1);
  if (EndsWith(name, ".bin")) name.resize(name.size() - 4);
  if (name.empty()) throw UsageError("--whisper-model '" + v + "': no file name");
  return {name, v};
}

SpeechModels::SpeechModels(const std::vector<std::string>& specs, const std::string& models_dir) {
  for (const std::string& s : specs) {
    auto [name, path] = SpeechModelSpec(s);
    entries_.push_back({name, path, nullptr, ""});
  }
  n_given_ = entries_.size();
  if (!models_dir.empty()) {
    std::vector<std::string> files;
    if (DIR* d = opendir(models_dir.c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (EndsWith(n, ".bin") && IsWhisperBin(models_dir + "/" + n)) files.push_back(n);
      }
      closedir(d);
    }
    std::sort(files.begin(), files.end());
    for (const std::string& n : files) entries_.push_back({n.substr(0, n.size() - 4), models_dir + "/" + n, nullptr, ""});
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (entries_[i].name == entries_[j].name) {
        throw UsageError("speech model name '" + entries_[i].name + "' given twice (" + entries_[j].path + ", " +
                         entries_[i].path + "): name one with --whisper-model FILE=NAME");
      }
    }
  }
}

std::vector<SpeechModels::Entry> SpeechModels::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

int SpeechModels::Find(const std::string& name) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == name) return int(i);
  }
  // OpenAI's model name, as its clients send it: the first speech model.
  return name == "whisper-1" && !entries_.empty() ? 0 : -1;
}

std::shared_ptr<const zf_speech_model> SpeechModels::Use(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);  // one load at a time; a loaded model is returned at once
  Entry& e = entries_[i];
  if (e.model) return e.model;
  zf_speech_model* m = nullptr;
  if (zf_speech_load(e.path.c_str(), 0, &m) != ZF_OK) {
    e.error = zf_last_error();
    throw ApiError{500, "server_error", "model_load_failed", "speech model '" + e.name + "': " + e.error};
  }
  e.error.clear();
  e.model = std::shared_ptr<const zf_speech_model>(m, SpeechDeleter());
  return e.model;
}

bool SpeechModels::LoadGiven(std::string* error) {
  for (size_t i = 0; i < n_given_; ++i) {
    try {
      Use(i);
    } catch (const ApiError& e) {
      *error = e.message;
      return false;
    }
  }
  return true;
}

std::string SpeechModels::Names() const {
  std::string out;
  for (const Entry& e : entries_) out += (out.empty() ? "" : ", ") + e.name;
  return out;
}

}  // namespace cli::serve
