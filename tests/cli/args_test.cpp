// The CLI's option table and parser (src/cli/args.*): each value kind, aliases, inline values,
// missing / bad values, unknown and misplaced options, repeated options, and that generate,
// bench and serve read the options they share the same way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/serve/options.h"
#include "zerfoo.h"

namespace cli {
namespace {

// argv for "zerfoo <command> args..."; owns the strings.
class Argv {
 public:
  Argv(const std::string& command, std::initializer_list<std::string> args) {
    strings_ = {"zerfoo", command};
    strings_.insert(strings_.end(), args.begin(), args.end());
    for (std::string& s : strings_) ptrs_.push_back(&s[0]);
  }
  int argc() { return static_cast<int>(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> ptrs_;
};

ParsedArgs Parse(const std::string& command, std::initializer_list<std::string> args) {
  Argv a(command, args);
  return ParseCommandLine(command, a.argc(), a.argv(), 2);
}

Options ParseOptions(const std::string& command, std::initializer_list<std::string> args) {
  Argv a(command, args);
  return ParseArgs(command, a.argc(), a.argv(), 2);
}

serve::ServeOptions ParseServe(std::initializer_list<std::string> args) {
  Argv a("serve", args);
  return serve::ParseServeArgs(a.argc(), a.argv(), 2);
}

// The UsageError message `command args...` throws ("" when it does not throw).
std::string ErrorOf(const std::string& command, std::initializer_list<std::string> args) {
  try {
    Parse(command, args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(CliArgs, EachKind) {
  const ParsedArgs a = Parse("generate", {"--ignore-eos", "-n", "-1", "--temp", "0.25", "--seed",
                                          "18446744073709551615", "-m", "m.gguf", "--device", "cpu"});
  EXPECT_TRUE(a.Has("--ignore-eos"));                                  // flag
  EXPECT_FALSE(a.Has("--json"));
  EXPECT_EQ(a.Int("--n-predict", 7), -1);                              // int, its lower bound
  EXPECT_DOUBLE_EQ(a.Float("--temp", 0), 0.25);                        // float
  EXPECT_EQ(a.UInt("--seed", 0), 18446744073709551615ull);             // u64, its upper bound
  EXPECT_EQ(a.String("--model"), "m.gguf");                            // string
  EXPECT_EQ(a.Int("--device", -1), ZF_DEVICE_CPU);                     // choice
  const ParsedArgs b = Parse("bench", {"-m", "m.gguf", "-p", "0,128,512"});
  EXPECT_EQ(b.IntList("--n-prompt", {}), (std::vector<int64_t>{0, 128, 512}));  // list
  // Absent options give the caller's default.
  EXPECT_EQ(a.Int("--top-k", 40), 40);
  EXPECT_EQ(b.IntList("--n-gen", {128}), (std::vector<int64_t>{128}));
}

TEST(CliArgs, AliasesAndInlineValuesMeanTheSameOption) {
  for (const char* name : {"-c", "--ctx-size", "--ctx"}) {
    EXPECT_EQ(Parse("serve", {name, "4096"}).Int("--ctx-size", 0), 4096) << name;
    EXPECT_EQ(Parse("chat", {name, "4096"}).Int("--ctx-size", 0), 4096) << name;
  }
  EXPECT_EQ(Parse("generate", {"--threads=3"}).Int("--threads", 0), 3);
  EXPECT_EQ(Parse("serve", {"-np", "4"}).Int("--parallel", 0), 4);
  EXPECT_EQ(Parse("bench", {"-dev", "cuda"}).Int("--device", 0), ZF_DEVICE_CUDA);
  EXPECT_EQ(Parse("generate", {"--device=cuda"}).Int("--device", 0), ZF_DEVICE_CUDA);
  EXPECT_EQ(Parse("chat", {"--template", "t.jinja"}).String("--chat-template-file"), "t.jinja");
  EXPECT_EQ(Parse("serve", {"-md", "d.gguf"}).String("--model-draft"), "d.gguf");
  // A negative number is a value, not an option.
  EXPECT_EQ(Parse("serve", {"--prefix-cache-mib", "-1"}).Int("--prefix-cache-mib", 0), -1);
}

TEST(CliArgs, OneShortNameMeansWhatTheCommandSays) {
  // -p is the prompt for generate, the prompt sizes for bench; -t a number or a list.
  EXPECT_EQ(Parse("generate", {"-p", "12"}).String("--prompt"), "12");
  EXPECT_EQ(Parse("bench", {"-p", "12"}).IntList("--n-prompt", {}), (std::vector<int64_t>{12}));
  EXPECT_EQ(Parse("bench", {"-t", "1,2"}).IntList("--threads", {}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ErrorOf("generate", {"-t", "1,2"}), "-t: expected an integer, got '1,2'");
}

TEST(CliArgs, MissingValue) {
  EXPECT_EQ(ErrorOf("generate", {"-m"}), "option '-m' needs a value");
  EXPECT_EQ(ErrorOf("serve", {"--port"}), "option '--port' needs a value");
  EXPECT_EQ(ErrorOf("bench", {"-m", "x", "-p"}), "option '-p' needs a value");
  EXPECT_EQ(ErrorOf("generate", {"--json=1"}), "option '--json' takes no value");
}

TEST(CliArgs, BadValueNamesTheOptionAsTypedAndTheValue) {
  EXPECT_EQ(ErrorOf("generate", {"--threads", "x"}), "--threads: expected an integer, got 'x'");
  EXPECT_EQ(ErrorOf("serve", {"-t", "x"}), "-t: expected an integer, got 'x'");
  EXPECT_EQ(ErrorOf("serve", {"-t", " 5"}), "-t: expected an integer, got ' 5'");
  EXPECT_EQ(ErrorOf("serve", {"--port", "70000"}), "--port: 70000 is out of range [0, 65535]");
  EXPECT_EQ(ErrorOf("chat", {"--top-p", "1.5"}), "--top-p: 1.5 is out of range [0, 1]");
  EXPECT_EQ(ErrorOf("chat", {"--temp", "nan"}), "--temp: nan is out of range [0, 100]");
  EXPECT_EQ(ErrorOf("generate", {"--seed", "-1"}), "--seed: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf("info", {"--device", "gpu"}), "--device: expected auto, cpu or cuda, got 'gpu'");
  EXPECT_EQ(ErrorOf("bench", {"-o", "csv"}), "-o: expected md or json, got 'csv'");
  EXPECT_EQ(ErrorOf("bench", {"-t", "0"}), "-t: 0 is out of range [1, 1048576]");
  EXPECT_EQ(ErrorOf("bench", {"-p", "8,,16"}), "-p: expected an integer, got ''");
  EXPECT_EQ(ErrorOf("generate", {"--draft-max", "17"}), "--draft-max: 17 is out of range [1, 16]");
  EXPECT_EQ(ErrorOf("serve", {"--parallel", "0"}), "--parallel: 0 is out of range [1, 256]");
}

TEST(CliArgs, UnknownAndMisplacedOptions) {
  EXPECT_EQ(ErrorOf("serve", {"--bogus"}), "unknown option '--bogus'");
  EXPECT_EQ(ErrorOf("generate", {"--bogus=1"}), "unknown option '--bogus'");
  EXPECT_EQ(ErrorOf("generate", {"--system", "x"}), "option '--system' is not valid for 'generate'");
  EXPECT_EQ(ErrorOf("bench", {"--temp", "0"}), "option '--temp' is not valid for 'bench'");
  EXPECT_EQ(ErrorOf("serve", {"-r", "3"}), "option '-r' is not valid for 'serve'");
  // After "--" everything is an argument; "-" alone is one too (stdin).
  const ParsedArgs a = Parse("tokenize", {"--", "--bogus", "-"});
  EXPECT_EQ(a.positional, (std::vector<std::string>{"--bogus", "-"}));
}

TEST(CliArgs, RepeatedOptions) {
  // Scalars: the last one counts. Strings keep every occurrence; lists add up.
  EXPECT_EQ(Parse("generate", {"-t", "2", "--threads", "4"}).Int("--threads", 0), 4);
  const ParsedArgs a = Parse("chat", {"--stop", "a", "--stop", "b", "--stop", "a"});
  EXPECT_EQ(a.Strings("--stop"), (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(a.String("--stop"), "a");
  const ParsedArgs b = Parse("bench", {"-m", "x.gguf", "-n", "16,32", "--n-gen", "64", "-m", "y.gguf"});
  EXPECT_EQ(b.IntList("--n-gen", {}), (std::vector<int64_t>{16, 32, 64}));
  EXPECT_EQ(b.Strings("--model"), (std::vector<std::string>{"x.gguf", "y.gguf"}));
  EXPECT_EQ(ParseOptions("generate", {"-m", "m", "-p", "p", "--stop", "x", "--stop", "y"}).stop,
            (std::vector<std::string>{"x", "y"}));
}

TEST(CliArgs, GenerateOptionsAndRequiredFlags) {
  const Options o = ParseOptions("generate", {"-m", "m.gguf", "-p", "hi", "-n", "5", "--temp", "0", "-c", "512",
                                              "--top-k", "3", "--lookup"});
  EXPECT_EQ(o.model, "m.gguf");
  EXPECT_EQ(o.prompt, "hi");
  EXPECT_EQ(o.n_predict, 5);
  EXPECT_EQ(o.temp, 0.0f);
  EXPECT_EQ(o.ctx, 512);
  EXPECT_EQ(o.top_k, 3);
  EXPECT_FALSE(o.top_p.has_value());  // unset: the library's default applies
  EXPECT_FALSE(o.seed.has_value());
  EXPECT_EQ(o.draft_max, 8);
  EXPECT_EQ(o.device, ZF_DEVICE_AUTO);
  auto error = [](std::initializer_list<std::string> args, const std::string& command = "generate") {
    try {
      ParseOptions(command, args);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({"-p", "hi"}), "missing -m MODEL");
  EXPECT_EQ(error({"-m", "m"}), "missing -p PROMPT");
  EXPECT_EQ(error({"-m", "m", "-p", "hi", "extra"}), "unexpected argument 'extra'");
  EXPECT_EQ(error({"-m", "m"}, "tokenize"), "tokenize takes exactly one TEXT argument ('-' reads stdin)");
  EXPECT_EQ(error({"--help"}), "");  // --help needs nothing else
  EXPECT_EQ(ParseOptions("tokenize", {"-m", "m", "-"}).positional, (std::vector<std::string>{"-"}));
}

TEST(CliArgs, SharedOptionsReadTheSameInGenerateAndServe) {
  // --lookup / -md turn drafting on with 8 tokens unless --draft-max says otherwise, in any order.
  for (auto args : {std::initializer_list<std::string>{"-m", "m", "-p", "p", "--lookup"},
                    std::initializer_list<std::string>{"-m", "m", "-p", "p", "-md", "d"}}) {
    EXPECT_EQ(ParseOptions("generate", args).draft_max, 8);
  }
  EXPECT_EQ(ParseOptions("chat", {"-m", "m", "--draft-max", "3", "--lookup"}).draft_max, 3);
  EXPECT_EQ(ParseOptions("chat", {"-m", "m", "--lookup", "--draft-max", "3"}).draft_max, 3);
  EXPECT_EQ(ParseOptions("chat", {"-m", "m"}).draft_max, 0);
  EXPECT_EQ(ParseServe({"-m", "m", "--lookup"}).draft_max, 8);
  EXPECT_EQ(ParseServe({"-m", "m", "--draft-max", "5", "-md", "d.gguf"}).draft_max, 5);
  EXPECT_EQ(ParseServe({"-m", "m"}).draft_max, 0);
  const Options g = ParseOptions("chat", {"-m", "m", "--device", "cpu", "-t", "3", "--ctx-size", "256"});
  const serve::ServeOptions s = ParseServe({"-m", "m", "--device", "cpu", "-t", "3", "--ctx", "256"});
  EXPECT_EQ(g.device, s.device);
  EXPECT_EQ(g.threads, s.threads);
  EXPECT_EQ(g.ctx, s.ctx);
}

// Sets an environment variable for one scope (unset after: the tests run without these).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

// -ctk / -ctv (llama.cpp's words) for generate, chat, bench and serve; serve's default from
// ZERFOO_KV_CACHE_TYPE for K and V (Ollama's OLLAMA_KV_CACHE_TYPE), the flags above it.
TEST(CliArgs, CacheTypes) {
  const Options d = ParseOptions("generate", {"-m", "m", "-p", "p"});
  EXPECT_EQ(d.kv_type, ZF_KV_F16);
  EXPECT_EQ(d.kv_type_v, ZF_KV_SAME);
  const Options g = ParseOptions("chat", {"-m", "m", "-ctk", "q8_0", "--cache-type-v=q4_0"});
  EXPECT_EQ(g.kv_type, ZF_KV_Q8_0);
  EXPECT_EQ(g.kv_type_v, ZF_KV_Q4_0);
  EXPECT_EQ(ErrorOf("generate", {"-ctk", "q5_1"}), "-ctk: expected f32, f16, q8_0 or q4_0, got 'q5_1'");
  EXPECT_EQ(Parse("bench", {"-m", "m", "-ctv", "f32"}).Int("--cache-type-v", -1), ZF_KV_F32);
  EXPECT_NE(ErrorOf("info", {"-ctk", "q8_0"}), "");
  const serve::ServeOptions s = ParseServe({"-m", "m", "-ctk", "q4_0"});
  EXPECT_EQ(s.kv_type, ZF_KV_Q4_0);
  EXPECT_EQ(s.kv_type_v, ZF_KV_SAME);
  {
    ScopedEnv env("ZERFOO_KV_CACHE_TYPE", "q8_0");
    EXPECT_EQ(ParseServe({"-m", "m"}).kv_type, ZF_KV_Q8_0);
    EXPECT_EQ(ParseServe({"-m", "m", "-ctk", "f16"}).kv_type, ZF_KV_F16);
    EXPECT_EQ(ParseServe({"-m", "m", "-ctv", "f16"}).kv_type_v, ZF_KV_F16);
  }
  ScopedEnv bad("ZERFOO_KV_CACHE_TYPE", "q5");
  try {
    ParseServe({"-m", "m"});
    ADD_FAILURE() << "ZERFOO_KV_CACHE_TYPE=q5 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ZERFOO_KV_CACHE_TYPE='q5'"), std::string::npos) << e.what();
  }
}

// chat: reasoning shown unless hidden, --json a chat option too, and neither one elsewhere.
TEST(CliArgs, ChatReasoningAndJson) {
  EXPECT_TRUE(ParseOptions("chat", {"-m", "m"}).show_reasoning);
  EXPECT_FALSE(ParseOptions("chat", {"-m", "m", "--reasoning", "hide"}).show_reasoning);
  EXPECT_TRUE(ParseOptions("chat", {"-m", "m", "--reasoning=hide", "--reasoning", "show"}).show_reasoning);
  EXPECT_TRUE(ParseOptions("chat", {"-m", "m", "--json"}).json);
  EXPECT_EQ(ErrorOf("chat", {"--reasoning", "dim"}), "--reasoning: expected show or hide, got 'dim'");
  EXPECT_NE(ErrorOf("generate", {"--reasoning", "hide"}), "");
  EXPECT_NE(CommandHelp("chat").find("--reasoning show|hide"), std::string::npos);
}

TEST(CliArgs, ServeDefaultsAndDependentOptions) {
  const serve::ServeOptions d = ParseServe({"-m", "/models/SmolLM2.Q8_0.gguf"});
  EXPECT_EQ(d.host, "127.0.0.1");
  EXPECT_EQ(d.port, 8080);
  EXPECT_EQ(d.parallel, 0);
  EXPECT_EQ(d.queue, 512);
  EXPECT_EQ(d.timeout, 15);
  EXPECT_EQ(d.max_body, size_t(16) << 20);
  EXPECT_EQ(d.max_inputs, 2048);
  EXPECT_EQ(d.max_documents, 1000);
  EXPECT_EQ(d.grace, 30);
  EXPECT_EQ(d.device, ZF_DEVICE_AUTO);
  EXPECT_TRUE(d.cache_prompt);
  EXPECT_FALSE(d.fast_prefill);
  EXPECT_TRUE(d.batch);
  EXPECT_EQ(d.alias, "SmolLM2.Q8_0");
  EXPECT_EQ(ParseServe({"-m", "m", "--max-body-mb", "2"}).max_body, size_t(2) << 20);
  EXPECT_EQ(ParseServe({"-m", "m", "--alias", "tiny"}).alias, "tiny");
  EXPECT_FALSE(ParseServe({"-m", "m", "--no-batch"}).batch);
  // --fast-prefill turns prompt reuse off unless --cache-prompt is given; the later of
  // --cache-prompt / --no-cache-prompt wins.
  EXPECT_FALSE(ParseServe({"-m", "m", "--fast-prefill"}).cache_prompt);
  EXPECT_TRUE(ParseServe({"-m", "m", "--fast-prefill", "--cache-prompt"}).cache_prompt);
  EXPECT_TRUE(ParseServe({"-m", "m", "--cache-prompt", "--fast-prefill"}).cache_prompt);
  EXPECT_FALSE(ParseServe({"-m", "m", "--no-cache-prompt"}).cache_prompt);
  EXPECT_FALSE(ParseServe({"-m", "m", "--cache-prompt", "--no-cache-prompt"}).cache_prompt);
  EXPECT_TRUE(ParseServe({"-m", "m", "--no-cache-prompt", "--cache-prompt"}).cache_prompt);
  EXPECT_TRUE(ParseServe({"--help"}).help);
  EXPECT_THROW(ParseServe({}), UsageError);
  EXPECT_THROW(ParseServe({"-m", "m", "extra"}), UsageError);
  EXPECT_THROW(ParseServe({"-m", "m", "--chat-template-file", "/nonexistent/t.jinja"}), UsageError);
}

TEST(CliArgs, HelpListsEachCommandsOptionsFromTheTable) {
  const std::string gen = CommandHelp("generate"), serve = CommandHelp("serve"), bench = CommandHelp("bench");
  EXPECT_NE(gen.find("usage: zerfoo generate"), std::string::npos);
  EXPECT_NE(gen.find("  -t, --threads N "), std::string::npos) << gen;
  EXPECT_NE(gen.find("  -c, --ctx-size, --ctx N "), std::string::npos) << gen;
  EXPECT_NE(gen.find("      --temp T "), std::string::npos) << gen;
  EXPECT_EQ(gen.find("--system"), std::string::npos);  // chat's, not generate's
  EXPECT_NE(serve.find("  -np, --parallel N "), std::string::npos) << serve;
  EXPECT_NE(serve.find("  -md, --model-draft FILE "), std::string::npos) << serve;
  EXPECT_EQ(serve.find("--temp T"), std::string::npos);  // sampling is per request
  EXPECT_NE(bench.find("  -t, --threads LIST "), std::string::npos) << bench;
  EXPECT_NE(bench.find("  -dev, --device DEV "), std::string::npos) << bench;
  // Every line fits in 100 columns (long help texts wrap).
  for (const std::string* text : {&gen, &serve, &bench}) {
    size_t start = 0;
    while (start < text->size()) {
      const size_t end = text->find('\n', start);
      EXPECT_LE(end - start, 100u) << text->substr(start, end - start);
      start = end + 1;
    }
  }
}

// Images (issue #46 §2): --mmproj / --image for generate and chat, the server's image options,
// and the usage errors that need no model.
TEST(CliArgs, ImageOptions) {
  const Options g = ParseOptions("generate", {"-m", "m.gguf", "--mmproj", "p.gguf", "--image", "a.png", "--image",
                                              "b.jpg", "-p", "<__media__> and <__media__>"});
  EXPECT_EQ(g.mmproj, "p.gguf");
  EXPECT_EQ(g.images, (std::vector<std::string>{"a.png", "b.jpg"}));
  // No marker: every image goes first (llama-mtmd-cli's rule), any count.
  EXPECT_NO_THROW(ParseOptions("generate", {"-m", "m", "--mmproj", "p", "--image", "a", "-p", "x"}));
  auto usage = [](std::initializer_list<std::string> args) {
    try {
      ParseOptions("generate", args);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(usage({"-m", "m", "--image", "a.png", "-p", "x"}).find("add --mmproj FILE"), std::string::npos);
  EXPECT_NE(usage({"-m", "m", "--mmproj", "p", "--image", "a", "-p", "<__media__><__media__>"})
                .find("2 <__media__> markers but 1 --image"),
            std::string::npos);
  EXPECT_EQ(ParseOptions("chat", {"-m", "m", "--mmproj", "p", "--image", "a"}).images.size(), 1u);
  EXPECT_NE(ErrorOf("serve", {"--image", "a.png"}).find("not valid for 'serve'"), std::string::npos);

  // --image without --mmproj: the projector beside the model, by llama-server's router layouts.
  char tmpl[] = "/tmp/zf_args_mmprojXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto touch = [](const std::string& path) { std::fclose(std::fopen(path.c_str(), "w")); };
  touch(dir + "/a.gguf");
  touch(dir + "/b.gguf");
  touch(dir + "/mmproj-b.gguf");
  // Beside a NAME.gguf among others: only mmproj-NAME.gguf belongs to it.
  EXPECT_NE(usage({"-m", dir + "/a.gguf", "--image", "x.png", "-p", "x"}).find("none found beside"),
            std::string::npos);
  const Options found = ParseOptions("generate", {"-m", dir + "/b.gguf", "--image", "x.png", "-p", "x"});
  EXPECT_EQ(found.mmproj, dir + "/mmproj-b.gguf");
  EXPECT_TRUE(found.mmproj_found);
  // A folder whose only model is this one: its one mmproj*.gguf, whatever its name.
  std::remove((dir + "/b.gguf").c_str());
  std::rename((dir + "/mmproj-b.gguf").c_str(), (dir + "/mmproj-model-f16.gguf").c_str());
  EXPECT_EQ(ParseOptions("chat", {"-m", dir + "/a.gguf", "--image", "x.png"}).mmproj, dir + "/mmproj-model-f16.gguf");
  // Two projectors there would be a guess: refused.
  touch(dir + "/mmproj-other.gguf");
  EXPECT_NE(usage({"-m", dir + "/a.gguf", "--image", "x.png", "-p", "x"}).find("add --mmproj FILE"),
            std::string::npos);
  // An explicit --mmproj is never replaced.
  EXPECT_FALSE(ParseOptions("chat", {"-m", dir + "/a.gguf", "--mmproj", "p", "--image", "a"}).mmproj_found);
  for (const char* f : {"/a.gguf", "/mmproj-model-f16.gguf", "/mmproj-other.gguf"}) std::remove((dir + f).c_str());
  rmdir(dir.c_str());

  const serve::ServeOptions s = ParseServe({"-m", "m.gguf", "--mmproj", "p.gguf", "--allow-image-urls",
                                            "--image-max-mb", "5", "--image-url-timeout", "3"});
  EXPECT_EQ(s.mmproj, "p.gguf");
  EXPECT_TRUE(s.allow_image_urls);
  EXPECT_EQ(s.image_max_bytes, size_t(5) << 20);
  EXPECT_EQ(s.image_url_timeout, 3);
  const serve::ServeOptions d = ParseServe({"-m", "m.gguf"});
  EXPECT_FALSE(d.allow_image_urls);
  EXPECT_EQ(d.image_max_bytes, size_t(20) << 20);
  EXPECT_NE(ErrorOf("serve", {"--image-max-mb", "0"}).find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace cli
