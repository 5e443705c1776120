// `zerfoo chat` on SmolLM2, greedy, two turns read from stdin: the second turn (the session
// reusing what it holds of the first) answers exactly what one fresh chat turn on a new session
// answers for the same conversation; the second turn reports the first turn's tokens as cached.
// Needs the CLI binary (ZF_CLI_PATH) and the SmolLM2 model (skipped without it).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;

// Runs `command` with `input` on stdin; returns its stdout, *rc its exit status.
std::string RunWithInput(const std::string& command, const std::string& input, int* rc) {
  char path[] = "/tmp/zf_chat_test_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return std::string();
  {
    std::ofstream f(path, std::ios::binary);
    f << input;
  }
  close(fd);
  std::string out;
  FILE* p = popen((command + " < " + path + " 2>/dev/null").c_str(), "r");
  if (p != nullptr) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::remove(path);
  return out;
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  return lines;
}

// One chat turn on a fresh session: the final assistant message.
json FreshTurn(const std::string& model_path, const json& messages, int32_t max_tokens) {
  zf_model* model = nullptr;
  EXPECT_EQ(zf_model_load(model_path.c_str(), nullptr, &model), ZF_OK) << zf_last_error();
  std::unique_ptr<zf_model, void (*)(zf_model*)> m(model, &zf_model_free);
  zf_session* session = nullptr;
  EXPECT_EQ(zf_session_create(model, nullptr, &session), ZF_OK) << zf_last_error();
  std::unique_ptr<zf_session, void (*)(zf_session*)> s(session, &zf_session_free);
  zf_generate_params gp;
  zf_generate_params_init(&gp, sizeof gp);
  gp.temperature = 0.0f;
  gp.max_tokens = max_tokens;
  const std::string request = json{{"messages", messages}}.dump();
  zf_turn_params tp;
  zf_turn_params_init(&tp, sizeof tp);
  tp.request_json = request.c_str();
  tp.generate = &gp;
  zf_turn* t = nullptr;
  EXPECT_EQ(zf_chat_turn(session, &tp, nullptr, nullptr, &t), ZF_OK) << zf_last_error();
  std::unique_ptr<zf_turn, void (*)(zf_turn*)> turn(t, &zf_chat_turn_free);
  size_t needed = 0;
  zf_chat_turn_message(t, nullptr, 0, &needed);
  std::string buf(needed, '\0');
  EXPECT_EQ(zf_chat_turn_message(t, buf.data(), buf.size(), &needed), ZF_OK) << zf_last_error();
  return json::parse(buf.c_str());
}

TEST(CliChat, SecondTurnEqualsAFreshTurnOfTheConversation) {
  ZF_REQUIRE_MODEL(model, "smollm2");
  const std::string system = "You are a concise assistant.";
  const std::string q1 = "What is the capital of France?";
  const std::string q2 = "And what is its most famous tower?";
  const int32_t n = 48;
  int rc = -1;
  const std::string out = RunWithInput(std::string(ZF_CLI_PATH) + " chat -m '" + model + "' --temp 0 -n " +
                                           std::to_string(n) + " --json --system '" + system + "'",
                                       q1 + "\n" + q2 + "\n", &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::vector<json> turns = JsonLines(out);
  ASSERT_EQ(turns.size(), 2u) << out;
  const json& first = turns[0]["message"];
  const json& second = turns[1]["message"];
  ASSERT_EQ(first["role"], "assistant");
  ASSERT_TRUE(first["content"].is_string() && !first["content"].get<std::string>().empty()) << out;

  // The second turn's prompt begins with the first turn's: the session held it.
  EXPECT_EQ(turns[0]["cached_tokens"], 0);
  EXPECT_GE(turns[1]["cached_tokens"].get<int>(), turns[0]["prompt_tokens"].get<int>()) << out;
  EXPECT_LT(turns[1]["cached_tokens"].get<int>(), turns[1]["prompt_tokens"].get<int>()) << out;

  const json conversation = json::array({{{"role", "system"}, {"content", system}},
                                          {{"role", "user"}, {"content", q1}},
                                          first,
                                          {{"role", "user"}, {"content", q2}}});
  const json fresh = FreshTurn(model, conversation, n);
  EXPECT_EQ(second, fresh) << "chat: " << second.dump() << "\nfresh: " << fresh.dump();
}

// Plain output streams the answers themselves, one after the other, each ending a line.
TEST(CliChat, PlainOutputIsTheAnswers) {
  ZF_REQUIRE_MODEL(model, "smollm2");
  int rc = -1;
  const std::string cmd = std::string(ZF_CLI_PATH) + " chat -m '" + model + "' --temp 0 -n 16";
  const std::string plain = RunWithInput(cmd, "Say hello.\n", &rc);
  ASSERT_EQ(rc, 0);
  const std::vector<json> turns = JsonLines(RunWithInput(cmd + " --json", "Say hello.\n", &rc));
  ASSERT_EQ(rc, 0);
  ASSERT_EQ(turns.size(), 1u);
  std::string content = turns[0]["message"]["content"].get<std::string>();
  if (content.empty() || content.back() != '\n') content += '\n';
  EXPECT_EQ(plain, content);
}

}  // namespace
