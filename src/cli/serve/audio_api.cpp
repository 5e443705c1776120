// /v1/audio/transcriptions and /v1/audio/translations: the form read and checked
// (audio_request.h), the model picked by name (speech_models.h), the audio decoded, one
// transcription at a time, and the answer in the format asked (json, text, srt, vtt,
// verbose_json) or, with stream=true, as Server-Sent Events: a transcript.text.delta per segment
// as it is decoded and transcript.text.done with the whole text.
#include "audio_api.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../transcript.h"
#include "streaming.h"

namespace cli::serve {
namespace {

// At most `limit` transcriptions at once (--parallel, whichever model); the others wait their
// turn. Those running on one model share its decoder passes (the library batches the decode
// steps of concurrent zf_transcribe calls), so a second request costs far less than a second run.
class Gate {
 public:
  explicit Gate(int limit) : limit_(std::max(1, limit)) {}
  void Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return busy_ < limit_; });
    ++busy_;
  }
  void Leave() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int limit_;
  int busy_ = 0;
};

ApiError SpeechError(zf_status st, std::string message) {
  // The library names its parameter (params->initial_prompt); the client sent the form field.
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"params->initial_prompt", "prompt"}, {"params->", ""}}) {
    for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at)) message.replace(at, from.size(), to);
  }
  if (st == ZF_ERR_INVALID_ARGUMENT || st == ZF_ERR_UNSUPPORTED || st == ZF_ERR_INVALID_UTF8) {
    return BadRequest(st == ZF_ERR_UNSUPPORTED ? "unsupported_parameter" : "invalid_parameter", message);
  }
  return ApiError{500, "server_error", zf_status_string(st), message};
}

void Answer(const transcript::Transcript& t, const std::string& format, httplib::Response& res) {
  if (format == "text") {
    res.set_content(transcript::Text(t), "text/plain; charset=utf-8");
  } else if (format == "srt") {
    res.set_content(transcript::Srt(t), "text/plain; charset=utf-8");
  } else if (format == "vtt") {
    res.set_content(transcript::Vtt(t), "text/vtt; charset=utf-8");
  } else if (format == "verbose_json") {
    res.set_content(transcript::Json(t, false), "application/json");
  } else {
    res.set_content(Dump(json{{"text", t.text}}), "application/json");
  }
}

// What a transcription needs on its own thread: the strings zf_transcribe_params points to.
struct Job {
  std::shared_ptr<const zf_speech_model> model;
  Gate* gate = nullptr;
  std::vector<float> pcm;
  std::string language, prompt;
  int n_threads = 0;
  float temperature = 0;  // 0: greedy, with whisper.cpp's fallback to hotter decoding (OpenAI's "automatic")
  bool translate = false;
  bool words = false;

  zf_status Run(const std::function<void(const transcript::Segment&)>& on_segment, transcript::Transcript* t,
                std::string* error) const {
    zf_transcribe_params p;
    zf_transcribe_params_init(&p, sizeof p);
    p.n_threads = n_threads;
    p.language = language.empty() ? nullptr : language.c_str();
    p.initial_prompt = prompt.empty() ? nullptr : prompt.c_str();
    p.temperature = temperature;
    if (translate) p.flags |= ZF_TRANSCRIBE_TRANSLATE;
    if (words) p.flags |= ZF_TRANSCRIBE_WORD_TIMESTAMPS;
    gate->Enter();
    struct Leave {
      Gate* g;
      ~Leave() { g->Leave(); }
    } leave{gate};
    return transcript::Run(model.get(), pcm, p, on_segment, t, error);
  }
};

// A streamed transcription: the job runs on its own thread; its segments wait here as events
// until the connection's writer takes them.
struct Stream {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> events;
  bool started = false, done = false, cancel = false;
  zf_status st = ZF_OK;
  std::string error;
  transcript::Transcript t;
  std::thread worker;
};

void StreamAnswer(Job job, httplib::Response& res) {
  auto s = std::make_shared<Stream>();
  s->worker = std::thread([s, job = std::move(job)] {
    transcript::Transcript t;
    std::string error;
    const zf_status st = job.Run(
        [&s](const transcript::Segment& seg) {
          std::lock_guard<std::mutex> lock(s->mu);
          if (s->cancel) throw std::runtime_error("the client left");  // stops the transcription
          s->events.push_back(SseEvent(Dump(json{{"type", "transcript.text.delta"}, {"delta", seg.text}})));
          s->started = true;
          s->cv.notify_all();
        },
        &t, &error);
    std::lock_guard<std::mutex> lock(s->mu);
    s->st = st;
    s->error = error;
    s->t = std::move(t);
    s->done = true;
    s->cv.notify_all();
  });
  // Until the first segment: a bad parameter (language, prompt) is still a plain 4xx.
  {
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return s->started || s->done; });
    if (s->done && s->st != ZF_OK) {
      lock.unlock();
      s->worker.join();
      throw SpeechError(s->st, s->error);
    }
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [s](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(s->mu);
        for (;;) {
          s->cv.wait(lock, [&] { return !s->events.empty() || s->done; });
          while (!s->events.empty()) {
            const std::string e = std::move(s->events.front());
            s->events.pop_front();
            lock.unlock();
            const bool ok = sink.write(e.data(), e.size());
            lock.lock();
            if (!ok) {
              s->cancel = true;
              return false;
            }
          }
          if (s->done) break;
        }
        std::string last;
        if (s->st == ZF_OK) {
          last = SseEvent(Dump(json{{"type", "transcript.text.done"}, {"text", s->t.text}}));
        } else {
          last = SseEvent(ErrorBody(SpeechError(s->st, s->error)));  // failed after the stream began
        }
        lock.unlock();
        sink.write(last.data(), last.size());
        sink.done();
        return true;
      },
      [s](bool) {
        {
          std::lock_guard<std::mutex> lock(s->mu);
          s->cancel = true;
        }
        if (s->worker.joinable()) s->worker.join();
      });
}

void Handle(SpeechModels* models, Gate* gate, int n_threads, bool translate, const httplib::Request& req,
            httplib::Response& res) {
  if (models == nullptr || models->size() == 0) {
    throw ApiError{404, "invalid_request_error", "model_not_found",
                   "this server has no speech model: start it with --whisper-model FILE (a whisper.cpp ggml .bin)"};
  }
  if (!req.is_multipart_form_data()) {
    throw ApiError{400, "invalid_request_error", "invalid_content_type",
                   "the body must be multipart/form-data with the audio in the field 'file'"};
  }
  AudioForm form;
  for (const auto& [name, part] : req.files) form.emplace(name, part.content);
  const AudioRequest r = ParseAudioForm(form, translate);
  const int i = models->Find(r.model);
  if (i < 0) {
    throw ApiError{404, "invalid_request_error", "model_not_found",
                   "model '" + r.model + "' not found: this server's speech models are " + models->Names() +
                       " (whisper-1 names the first)"};
  }
  Job job;
  job.model = models->Use(size_t(i));
  job.gate = gate;
  job.pcm = DecodeRequestAudio(r);
  job.n_threads = n_threads;
  job.translate = translate;
  job.language = r.language;
  job.prompt = r.prompt;
  job.temperature = static_cast<float>(r.temperature);
  job.words = r.words;
  // OpenAI detects the language when none is given; an English-only model decodes English.
  zf_speech_summary info;
  info.struct_size = sizeof info;
  if (r.language.empty() && zf_speech_info(job.model.get(), &info) == ZF_OK && info.multilingual) job.language = "auto";
  if (r.stream) {
    StreamAnswer(std::move(job), res);
    return;
  }
  transcript::Transcript t;
  std::string error;
  if (zf_status st = job.Run({}, &t, &error)) throw SpeechError(st, error);
  Answer(t, r.format, res);
}

}  // namespace

void AddAudioRoutes(FrontDoor& door, SpeechModels* models, int n_threads, int max_at_once) {
  auto gate = std::make_shared<Gate>(max_at_once);  // lives as long as the routes
  for (const bool translate : {false, true}) {
    const std::string path = translate ? "/v1/audio/translations" : "/v1/audio/transcriptions";
    door.Post(path, ErrorBody, [&door, models, gate, n_threads, translate](const httplib::Request& req,
                                                                           httplib::Response& res) {
      if (!door.Authorized(req, res, ErrorBody)) return;
      try {
        Handle(models, gate.get(), n_threads, translate, req, res);
      } catch (const ApiError& e) {
        SendError(res, e);
      }
    });
  }
}

}  // namespace cli::serve
