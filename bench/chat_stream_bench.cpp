// Cost of reading a streamed assistant turn (src/chat/stream_parser.h) per generated piece, at
// the start and at the end of a ~16 KB answer (~4,000 pieces of 4 bytes), with tools offered and
// Qwen2.5's <tool_call> format (Hermes): (i) plain content, (ii) reasoning then content, (iii) a
// call whose JSON arguments hold a 12 KB string; (iv) the same call in Qwen3-Coder's XML
// parameters (the current call re-read per piece). "Old" is what `zerfoo serve` did per piece
// before: ParseAssistant(partial) on the whole turn so far (its JSON round trip not counted).
//   zerfoo_chat_stream_bench [--benchmark_filter=...]
// Time is per piece (the mean over 100 consecutive pieces at that place, 200 runs); Finish's is
// per turn.
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/parser.h"
#include "chat/stream_parser.h"
#include "jinja/jinja.h"

namespace {

using Json = nlohmann::ordered_json;
constexpr size_t kPieceBytes = 4, kMeasured = 100;

zf::chat::ChatFormat DeriveFormat(const std::string& stem) {
  std::ifstream in(std::string(ZF_SOURCE_DIR) + "/tests/data/chat_templates/templates/" + stem + ".jinja");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  zf::jinja::Template t(source);
  return zf::chat::DeriveChatFormat(
      [&](const Json& messages, bool gen, std::string* out) {
        Json vars = {{"messages", messages}, {"add_generation_prompt", gen}, {"tools", zf::chat::ProbeTools()}};
        try {
          *out = t.Render(zf::jinja::FromJson(vars.dump()), zf::jinja::Limits());
          return true;
        } catch (const zf::jinja::Error&) {
          return false;
        }
      },
      source);
}

// Scenario 3 is in Qwen3-Coder's format, the others in Qwen2.5's.
const zf::chat::ChatFormat& Format(int scenario) {
  static const zf::chat::ChatFormat hermes = DeriveFormat("Qwen-Qwen2.5-7B-Instruct");
  static const zf::chat::ChatFormat xml = DeriveFormat("Qwen3-Coder");
  return scenario == 3 ? xml : hermes;
}

const Json& Tools() {
  static const Json t = Json::parse(R"([{"type": "function", "function": {"name": "write_file", "parameters":
    {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}])");
  return t;
}

std::string Prose(size_t bytes) {
  static const std::string kWords = "The quick brown fox jumps over the lazy dog, then rests a while. ";
  std::string s;
  while (s.size() < bytes) s += kWords;
  s.resize(bytes);
  return s;
}

// The answer of scenario 0 (content), 1 (reasoning, content), 2 (a call with long arguments) or
// 3 (that call with XML parameters).
std::string Answer(int scenario) {
  if (scenario == 0) return Prose(16000);
  if (scenario == 1) return "<think>\n" + Prose(8000) + "\n</think>\n\n" + Prose(8000);
  if (scenario == 3) {
    std::string body;  // a file's text as written: raw line breaks and quotes
    while (body.size() < 12000) body += "line of \"code\" = 42;\n";
    return "I will write it.\n<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n"
           "<parameter=content>\n" + body + "</parameter>\n</function>\n</tool_call>";
  }
  std::string body;  // a file's text as a JSON string: escaped line breaks and quotes
  while (body.size() < 12000) body += "line of \\\"code\\\" = 42;\\n";
  return "I will write it.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"" + body +
         "\"}}\n</tool_call>";
}

std::vector<std::string> Pieces(const std::string& text) {
  std::vector<std::string> p;
  for (size_t i = 0; i < text.size(); i += kPieceBytes) p.push_back(text.substr(i, kPieceBytes));
  return p;
}

// Pieces [from, from + kMeasured) of the answer pushed into a parser that has read the ones
// before (not timed): time per piece.
void BM_StreamPush(benchmark::State& state) {
  const int scenario = static_cast<int>(state.range(0));
  const std::vector<std::string> pieces = Pieces(Answer(scenario));
  const size_t from = state.range(1) == 0 ? 0 : pieces.size() - kMeasured;
  std::vector<zf::chat::Delta> deltas;
  for (auto _ : state) {
    zf::chat::StreamParser sp(Format(scenario), Tools(), zf::chat::ReadOptions());
    for (size_t k = 0; k < from; ++k) sp.Push(pieces[k], &deltas);
    deltas.clear();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t k = from; k < from + kMeasured; ++k) sp.Push(pieces[k], &deltas);
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(deltas.data());
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kMeasured);
    deltas.clear();
  }
}

// The old way: the whole turn so far parsed again (partial) for each piece.
void BM_OldReparse(benchmark::State& state) {
  const int scenario = static_cast<int>(state.range(0));
  const std::string text = Answer(scenario);
  const std::vector<std::string> pieces = Pieces(text);
  const size_t from = state.range(1) == 0 ? 0 : pieces.size() - kMeasured;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t k = from; k < from + kMeasured; ++k) {
      const size_t len = std::min(text.size(), (k + 1) * kPieceBytes);
      benchmark::DoNotOptimize(zf::chat::ParseAssistant(std::string_view(text).substr(0, len), Format(scenario), Tools(), true));
    }
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kMeasured);
  }
}

// Finish: the whole turn read once at the end.
void BM_StreamFinish(benchmark::State& state) {
  const int scenario = static_cast<int>(state.range(0));
  const std::vector<std::string> pieces = Pieces(Answer(scenario));
  std::vector<zf::chat::Delta> deltas;
  for (auto _ : state) {
    zf::chat::StreamParser sp(Format(scenario), Tools(), zf::chat::ReadOptions());
    for (const std::string& p : pieces) sp.Push(p, &deltas);
    const auto t0 = std::chrono::steady_clock::now();
    sp.Finish(&deltas);
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    deltas.clear();
  }
}

// Args: scenario (0 content, 1 reasoning + content, 2 long call, 3 long XML call), place (0 start, 1 end).
void Places(benchmark::internal::Benchmark* b) {
  b->ArgNames({"scenario", "end"});
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 2; ++e) b->Args({s, e});
  // A fixed count: each iteration also reads the pieces before the measured ones (not timed).
  b->UseManualTime()->Iterations(200)->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_StreamPush)->Apply(Places);
BENCHMARK(BM_OldReparse)->Apply(Places);
BENCHMARK(BM_StreamFinish)->DenseRange(0, 3)->UseManualTime()->Iterations(200)->Unit(benchmark::kMicrosecond);

}  // namespace
