// One image's cost through the C ABI, for bench/vision_bench.sh: the encode alone
// (zf_image_embed: decode, preprocessing, encoder and projector) and the time to the first token
// of a turn holding the image (text before the <__media__> marker, zf_session_eval_image, the
// rest of the prompt and one greedy token: what `zerfoo generate --image` does). Loading is not
// timed, as llama-mtmd-cli's timings leave it out. The turn encodes the image again
// (zf_image_embed does not fill the projector's cache of recent images, the turn's first look
// there misses). One repetition per process, the model's prefix cache off, so no run finds
// another's work.
// Beside the wall clock, each part's CPU time (user + system of all the process's threads,
// getrusage): on a shared machine a CPU-time ratio is far less sensitive to other jobs.
//   zerfoo_vision_bench -m LM.gguf --mmproj MMPROJ.gguf --image FILE [-t N] [-c N] [-p PROMPT]
//                       [--encode-only 1]
// Prints one JSON object: encode_ms, encode_cpu_ms, ttft_ms, ttft_cpu_ms, image_tokens,
// prompt_tokens (--encode-only: the encode's two alone).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// User + system time of the whole process so far (every thread), ms.
double CpuMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto ms = [](const timeval& t) { return 1e3 * static_cast<double>(t.tv_sec) + 1e-3 * static_cast<double>(t.tv_usec); };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

[[noreturn]] void Fail(const std::string& what, zf_status st) {
  std::fprintf(stderr, "zerfoo_vision_bench: %s: %s: %s\n", what.c_str(), zf_status_string(st), zf_last_error());
  std::exit(1);
}

void Check(const std::string& what, zf_status st) {
  if (st != ZF_OK) Fail(what, st);
}

struct Args {
  std::string model, mmproj, image;
  std::string prompt = "<start_of_turn>user\n<__media__>Describe this image in one sentence.<end_of_turn>\n"
                       "<start_of_turn>model\n";
  int threads = 2;
  int ctx = 4096;
  bool encode_only = false;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "zerfoo_vision_bench: %s needs a value\n", k.c_str());
      std::exit(2);
    }
    const char* v = argv[++i];
    if (k == "-m") {
      a.model = v;
    } else if (k == "--mmproj") {
      a.mmproj = v;
    } else if (k == "--image") {
      a.image = v;
    } else if (k == "-p") {
      a.prompt = v;
    } else if (k == "-t") {
      a.threads = std::atoi(v);
    } else if (k == "-c") {
      a.ctx = std::atoi(v);
    } else if (k == "--encode-only") {
      a.encode_only = std::atoi(v) != 0;
    } else {
      std::fprintf(stderr, "zerfoo_vision_bench: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.model.empty() || a.mmproj.empty() || a.image.empty() || a.threads < 1) {
    std::fprintf(stderr, "usage: zerfoo_vision_bench -m LM --mmproj F --image F [-t N] [-c N] [-p PROMPT]\n");
    std::exit(2);
  }
  return a;
}

std::vector<int32_t> Tokens(const zf_model* m, const std::string& text, uint32_t flags) {
  std::vector<int32_t> out(text.size() + 8);
  size_t n = 0;
  Check("tokenize", zf_tokenize(m, text.data(), text.size(), flags, out.data(), out.size(), &n));
  out.resize(n);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  std::ifstream f(a.image, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    std::fprintf(stderr, "zerfoo_vision_bench: --image %s: cannot read it or it is empty\n", a.image.c_str());
    return 1;
  }
  zf_image img{};
  img.struct_size = sizeof img;
  img.format = ZF_IMAGE_ENCODED;
  img.data = bytes.data();
  img.size = bytes.size();

  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.n_threads = a.threads;
  mp.prefix_cache_mib = -1;  // every run computes its whole prompt, as llama-mtmd-cli does
  zf_model* model = nullptr;
  Check("-m " + a.model, zf_model_load(a.model.c_str(), &mp, &model));
  zf_mmproj* mmproj = nullptr;
  Check("--mmproj " + a.mmproj, zf_mmproj_load(model, a.mmproj.c_str(), 0, &mmproj));

  // (a) The encode: the size first (no encode), then the timed call.
  size_t needed = 0;
  int32_t n_tokens = 0;
  zf_status st = zf_image_embed(mmproj, &img, a.threads, nullptr, 0, &needed, &n_tokens);
  if (st != ZF_ERR_BUFFER_TOO_SMALL && st != ZF_OK) Fail("--image " + a.image, st);
  std::vector<float> embd(needed);
  auto t0 = Clock::now();
  double c0 = CpuMs();
  Check("--image " + a.image, zf_image_embed(mmproj, &img, a.threads, embd.data(), embd.size(), &needed, &n_tokens));
  const double encode_ms = MsSince(t0);
  const double encode_cpu_ms = CpuMs() - c0;
  if (a.encode_only) {
    std::printf("{\"encode_ms\": %.1f, \"encode_cpu_ms\": %.0f, \"image_tokens\": %d}\n", encode_ms, encode_cpu_ms,
                n_tokens);
    zf_mmproj_free(mmproj);
    zf_model_free(model);
    return 0;
  }

  // (b) The turn: text up to the marker, the image, the rest and one greedy token.
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  sp.n_ctx = a.ctx;
  sp.n_threads = a.threads;
  zf_session* session = nullptr;
  Check("session", zf_session_create(model, &sp, &session));
  const std::string marker = "<__media__>";
  const size_t at = a.prompt.find(marker);
  if (at == std::string::npos) {
    std::fprintf(stderr, "zerfoo_vision_bench: -p holds no %s marker\n", marker.c_str());
    return 2;
  }
  const std::string rest = a.prompt.substr(at + marker.size());
  zf_generate_params gp;
  zf_generate_params_init(&gp, sizeof gp);
  gp.max_tokens = 1;
  gp.temperature = 0.0f;
  zf_generate_result r{};
  r.struct_size = sizeof r;
  t0 = Clock::now();
  c0 = CpuMs();
  const std::vector<int32_t> head =
      Tokens(model, a.prompt.substr(0, at), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
  if (!head.empty()) Check("eval", zf_session_eval(session, head.data(), head.size(), nullptr, 0));
  Check("eval image", zf_session_eval_image(session, mmproj, &img, nullptr, 0));
  Check("generate", zf_generate(session, rest.data(), rest.size(), &gp, nullptr, nullptr, &r));
  const double ttft_ms = MsSince(t0);
  const double ttft_cpu_ms = CpuMs() - c0;
  int32_t n_past = 0;
  zf_session_n_past(session, &n_past);

  std::printf(
      "{\"encode_ms\": %.1f, \"encode_cpu_ms\": %.0f, \"ttft_ms\": %.1f, \"ttft_cpu_ms\": %.0f, \"image_tokens\": %d, "
      "\"prompt_tokens\": %d}\n",
      encode_ms, encode_cpu_ms, ttft_ms, ttft_cpu_ms, n_tokens, n_past - r.n_generated);
  zf_session_free(session);
  zf_mmproj_free(mmproj);
  zf_model_free(model);
  return 0;
}
