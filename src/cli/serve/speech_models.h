// The server's Whisper models (/v1/audio/*): every --whisper-model [NAME=]FILE (named by NAME, else
// the file's stem) and every whisper.cpp .bin of --models-dir, each loaded on its first request
// and kept; a request's `model` field picks one by name, OpenAI's "whisper-1" the first.
#ifndef ZERFOO_CLI_SERVE_SPEECH_MODELS_H
#define ZERFOO_CLI_SERVE_SPEECH_MODELS_H

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace cli::serve {

class SpeechModels {
 public:
  // `specs`: --whisper-model values; `models_dir`: "" or the directory whose .bin files with
  // whisper.cpp's magic are added. Throws UsageError for a name given twice or an empty name.
  SpeechModels(const std::vector<std::string>& specs, const std::string& models_dir);

  struct Entry {
    std::string name, path;
    std::shared_ptr<const zf_speech_model> model;  // null until loaded
    std::string error;                             // the last load's failure
  };
  size_t size() const { return entries_.size(); }
  // Names and states, for /v1/models.
  std::vector<Entry> List() const;
  // The model a request's `model` names: its index, or -1 (not found).
  int Find(const std::string& name) const;
  // Model i, loaded on first use. Throws ApiError 500 with the loader's message.
  std::shared_ptr<const zf_speech_model> Use(size_t i);
  // Loads the --whisper-model ones now (the server's startup: a bad file fails it before it
  // listens); false with the message when one fails. --models-dir's load on first use.
  bool LoadGiven(std::string* error);
  // Names for messages: "a, b, c".
  std::string Names() const;

 private:
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  size_t n_given_ = 0;  // the first entries, from --whisper-model
};

// "NAME=FILE" -> {NAME, FILE}; "FILE" -> {its stem (no directory, no .bin), FILE}.
std::pair<std::string, std::string> SpeechModelSpec(const std::string& value);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_SPEECH_MODELS_H
