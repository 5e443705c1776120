// Writes the committed seed corpora of tests/fuzz/corpus/ (run by scripts/fuzz.sh --seeds;
// the output is committed, so this only runs when the seeds change).
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <utility>

#include "common/tiny_model.h"
#include "speech/whisper_builder.h"

namespace {

std::string g_root;

void Write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string d = g_root + "/" + dir;
  mkdir(d.c_str(), 0755);
  std::ofstream(d + "/" + name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                        std::streamsize(bytes.size()));
}
std::vector<uint8_t> Text(uint8_t first, const std::string& s) {
  std::vector<uint8_t> v{first};
  v.insert(v.end(), s.begin(), s.end());
  return v;
}
std::vector<uint8_t> Prefixed(uint8_t first, const std::vector<uint8_t>& s) {
  std::vector<uint8_t> v{first};
  v.insert(v.end(), s.begin(), s.end());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR TEST_DATA_DIR\n");
    return 2;
  }
  g_root = argv[1];
  mkdir(g_root.c_str(), 0755);
  using namespace zf::gguf::testutil;  // NOLINT
  // whisper_load: .bin headers with one mel bin (small inputs) and a few tensors; a WAV.
  {
    zf::speech::testing::BinBuilder b;
    b.hparams[9] = 1;
    b.filters_n_mel = 1;
    b.AddTensor("encoder.conv1.weight", 1, {3, 1, 8}, 0.5f);
    b.AddTensor("encoder.conv1.bias", 0, {1, 8}, 0.0f);
    b.AddTensor("encoder.blocks.0.mlp.0.weight", 8, {32, 2}, 0.0f);
    Write("whisper_load", "bin_1mel", Prefixed(0, b.Build()));
    const uint8_t wav[] = {'R', 'I', 'F', 'F', 40, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0, 1, 0, 1, 0,
                           0x80, 0x3e, 0, 0, 0, 0x7d, 0, 0, 2, 0, 16, 0, 'd', 'a', 't', 'a', 4, 0, 0, 0, 1, 0, 0xff, 0xff};
    Write("whisper_load", "wav_pcm16", Prefixed(1, std::vector<uint8_t>(wav, wav + sizeof wav)));
  }
  // audio_request: form fields, a NUL, then a file: 0.5 s of jfk.wav (public domain) as FLAC, Ogg
  // Vorbis and MP3 (tests/data/audio/), a WAV, and a translation with every field.
  {
    const std::string fields = "model=whisper-1\nresponse_format=verbose_json\ntimestamp_granularities[]=segment\n";
    for (const char* ext : {"flac", "ogg", "mp3"}) {
      std::ifstream f(std::string(argv[2]) + "/audio/jfk-0.5s." + ext, std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      Write("audio_request", std::string("jfk_") + ext, Text(0, fields + "language=en" + '\0' + ss.str()));
    }
    const uint8_t wav[] = {'R', 'I', 'F', 'F', 40, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0, 1, 0, 1, 0,
                           0x80, 0x3e, 0, 0, 0, 0x7d, 0, 0, 2, 0, 16, 0, 'd', 'a', 't', 'a', 4, 0, 0, 0, 1, 0, 0xff, 0xff};
    Write("audio_request", "wav", Text(0, fields + "stream=true\nresponse_format=text" + '\0' + std::string(wav, wav + sizeof wav)));
    Write("audio_request", "translate", Text(1, "model=m\nprompt=Kennedy\ntemperature=0.0\nstream=false" + std::string(1, '\0') + "RIFF"));
  }
  // gguf_load: a full tiny model (F32 and Q8_0 weights, n_embd 32) and vocab-only variants.
  Write("gguf_load", "tiny_f32", Prefixed(0, zf::testutil::TinyLlamaGguf(kTF32, "", 0, nullptr, 32)));
  Write("gguf_load", "tiny_q8_0", Prefixed(0, zf::testutil::TinyLlamaGguf(kTQ8_0, "", 0, nullptr, 32)));
  Write("gguf_load", "tiny_q8_0_vocab", Prefixed(1, zf::testutil::TinyLlamaGguf(kTQ8_0, "", 0, nullptr, 32)));
  {
    GgufBuilder b;
    b.Kv("general.architecture", val::Str("gemma3"))
        .Kv("tokenizer.ggml.model", val::Str("gpt2"))
        .Kv("tokenizer.ggml.pre", val::Str("llama3"))
        .Kv("tokenizer.ggml.tokens", val::StrArr({"a", "b", "ab", "\xC4\xA0", "<|eot_id|>"}))
        .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, {1, 1, 1, 1, 3}))
        .Kv("tokenizer.ggml.merges", val::StrArr({"a b"}))
        .Kv("tokenizer.chat_template", val::Str("{% for m in messages %}<start_of_turn>{{ m.content }}{% endfor %}"));
    Write("gguf_load", "bpe_vocab", Prefixed(1, b.Build()));
  }
  // tiny_decode: no mutation, a NaN scale, a few byte runs.
  for (uint8_t t = 0; t < 4; ++t) Write("tiny_decode", "clean_" + std::to_string(t), {t});
  Write("tiny_decode", "nan_q8", {1, 0x00, 0x10, 0x00, 0x01, 0x00, 0x7E});
  Write("tiny_decode", "bytes_q4k", {2, 0x10, 0x20, 0x00, 0x07, 1, 2, 3, 4, 5, 6, 7, 8});
  Write("tiny_decode", "big_f32", {4, 0x40, 0x02, 0x00, 0x03, 0x00, 0x00, 0x7F, 0x7F});
  // tokenizer: the reference test strings of both vocabularies.
  {
    std::ifstream in(std::string(argv[2]) + "/tokenizer/ggml-vocab-llama-spm.gguf.inp", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
    size_t pos = 0, i = 0;
    while (pos <= all.size() && i < 40) {
      size_t e = all.find(sep, pos);
      if (e == std::string::npos) e = all.size();
      const std::string t = all.substr(pos, e - pos);
      Write("tokenizer", "spm_" + std::to_string(i), Text(0, t));
      Write("tokenizer", "bpe_" + std::to_string(i), Text(1, t));
      pos = e + sep.size();
      ++i;
    }
    Write("tokenizer", "special", Text(6, "<s>Hello</s> <|endoftext|> world"));
  }
  // pretokenize: text for each splitter, and a pattern.
  const char* texts[] = {"Hello world, it's 2024!", "  multiple   spaces\n\nand\ttabs", "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 123456",
                         "I'm don't we'll they've", "\xF0\x9F\x98\x80 emoji!"};
  for (uint8_t k = 0; k < 10; ++k) Write("pretokenize", "pre_" + std::to_string(k), Text(k, texts[k % 5]));
  {
    std::string pat = std::string("\\s?\\p{L}+|\\p{N}{1,3}|[^\\s\\p{L}\\p{N}]+") + '\0' + "Hello 12345 world!!";
    Write("pretokenize", "pattern", Text(0x80, pat));
  }
  // sampler: parameters, then n_vocab, logits.
  {
    std::vector<uint8_t> v;
    const auto put = [&](const void* p, size_t n) { v.insert(v.end(), (const uint8_t*)p, (const uint8_t*)p + n); };
    const float temp = 0.8f, top_p = 0.95f, min_p = 0.05f, rp = 1.1f;
    const int32_t top_k = 40, last_n = 64;
    const uint64_t seed = 42;
    put(&temp, 4); put(&top_k, 4); put(&top_p, 4); put(&min_p, 4); put(&rp, 4); put(&last_n, 4); put(&seed, 8);
    v.push_back(15);
    for (int i = 0; i < 16; ++i) {
      const float l = float(i % 7) - 3.0f;
      put(&l, 4);
    }
    v.push_back(3);
    v.push_back(5);
    Write("sampler", "defaults", v);
  }
  // chat_template: the families' markers.
  const char* tmpls[] = {"<start_of_turn>", "<|im_start|>", "<|start_header_id|>", "[INST]", "<|user|>", "{{ bos_token }}"};
  for (int k = 0; k < 6; ++k) {
    std::string s = std::string(tmpls[k]) + '\0' + "system" + '\0' + "Be brief." + '\0' + "user" + '\0' + "Hi";
    Write("chat_template", "family_" + std::to_string(k), Text(uint8_t(k & 1), s));
  }
  // chat_parse: outputs in the formats of the fuzzer's templates (byte 0 picks one, byte 1
  // offers tools and picks streaming).
  const std::pair<uint8_t, std::string> outputs[] = {
      {0, "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
      {1, "<think>\nhmm\n</think>\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>"},
      {2, "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n2\n"
          "</parameter>\n</function>\n</tool_call>"},
      {3, "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": 1}, \"id\": \"abcdefghi\"}]"},
      {4, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}"},
      {5, "get_weather\n{\"city\": \"Lima\"}>>>search\n{}"},
      {6, "<|START_THINKING|>x<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": "
          "\"search\", \"parameters\": {}}\n]<|END_ACTION|>"},
      {7, "a\n</think>\n\nb"},
      {8, "<|tool_calls|><|tool_call:begin|>id1<|tool_call:name|>search<|tool_call:args|>{}<|tool_call:end|><|calls|>"},
      {9, "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Bern</arg_value>\n</tool_call>"},
      {10, "<|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]"},
      {11, "```json\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n```"},
      {12, "hm\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n"
           "{\"q\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {13, "Let me see.\nAction:\n```json\n[\n    {\n        \"tool_name\": \"search\",\n        \"parameters\": {}\n    }\n]```"},
      {14, "<|channel|>analysis<|message|>Two.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
           "<|constrain|>json<|message|>{\"city\": \"Oslo\"}<|call|>"},
      {15, "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"days\" "
           "string=\"false\">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"},
      {16, " to=search<|message|><atem:function_calls>\n<atem:invoke name=\"search\">\n<atem:parameter "
           "name=\"q\">x</atem:parameter>\n</atem:invoke>\n</atem:function_calls>"},
      {17, "<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>"
           "argument key=\"days\" type=\"integer\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>"},
      {25, "Let me.<|python_tag|>brave_search.call(query=\"a \"b\"\", n=2)"},  // 25 % 21: Llama 3.1
      {20, "<|tool_call_start|>[get_weather(city='Oslo', days=2, ok=True), search(q='a'b')]<|tool_call_end|>"},
      {18, "<|tool_call>call:get_weather{city:<|\"|>Bern<|\"|>,days:2,ok:true}<tool_call|>Sure."},
      {19, "]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"get_weather\">]<]minimax[>[<city>Oslo]<]minimax[>[</city>"
           "]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>"},
  };
  // Byte 1: bit 0 offers tools, bit 1 parses the text as a streamed prefix (calls in progress).
  for (const auto& [k, text] : outputs) {
    std::vector<uint8_t> v{k, 1};
    v.insert(v.end(), text.begin(), text.end());
    Write("chat_parse", "format_" + std::to_string(k), v);
    v[1] = 3;
    size_t cut = text.size() * 2 / 3;  // inside the call, at a character boundary
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    v.resize(2 + cut);
    Write("chat_parse", "partial_" + std::to_string(k), v);
  }
  // constraint: byte 0 = kind (0 JSON schema, 1 regex, 2 choice, 3 Lark; bit 2 greedy), then the
  // text; the hostile ones of issue #41 (a 3,000-rule chain, empty languages) among them.
  Write("constraint", "schema", Text(4, R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})"));
  Write("constraint", "schema_ref_self", Text(4, R"({"$ref":"#"})"));
  Write("constraint", "schema_enum", Text(0, R"({"enum":["a","ab",1,null]})"));
  Write("constraint", "regex", Text(5, "a(b|a)*"));
  Write("constraint", "choice", Text(6, R"(["a","ab","b"])"));
  Write("constraint", "lark", Text(7, "start: \"a\" r\nr: \"b\" | \"ab\"\n"));
  Write("constraint", "lark_self", Text(7, "start: start\n"));
  Write("constraint", "lark_cycle", Text(7, "start: a\na: b\nb: a\n"));
  std::string chain = "start: r0\n";
  for (int i = 0; i < 3000; ++i) chain += "r" + std::to_string(i) + ": r" + std::to_string(i + 1) + "\n";
  chain += "r3000: \"a\"\n";
  Write("constraint", "lark_chain_3000", Text(7, chain));
  // chat_turn: byte 0 = options (bit 0 logprobs, bit 1 a turn before, bit 2 sampled), the request JSON, then
  // optionally NUL and a template (one byte picks one of the fuzzer's corpus templates: 0 Qwen2.5,
  // 1 Qwen3, 2 Llama 3.1, 3 Mistral Nemo, 4 DeepSeek R1, 5 gpt-oss, 6 Command R7B, 7 Gemma 2,
  // 8 Functionary, 9 Granite; more bytes are its text).
  {
    const std::string user = R"("messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ab"}])";
    const std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": )"
                              R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},)"
                              R"( {"type": "function", "function": {"name": "search"}}])";
    const auto turn = [&](const std::string& name, uint8_t options, const std::string& body, int tmpl = -1,
                          const std::string& text = "") {
      std::string s = body;
      if (tmpl >= 0) s += std::string(1, '\0') + (text.empty() ? std::string(1, char(tmpl)) : text);
      Write("chat_turn", name, Text(options, s));
    };
    turn("plain", 0, "{" + user + "}");
    turn("plain_logprobs_reuse", 3, "{" + user + "}");
    turn("sampled_logprobs", 5, "{" + user + "}");
    turn("sampled_reasoning_r1", 4, "{" + user + "}", 4);
    turn("sampled_tools_auto", 4, "{" + user + ", " + tools + "}", 0);
    turn("parts_developer", 0, R"({"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"}, )"
                               R"({"type": "text", "text": "b"}]}, {"role": "user", "content": [{"type": "text", "text": "ab"}]}]})");
    for (int k = 0; k < 10; ++k) turn("plain_tmpl_" + std::to_string(k), 0, "{" + user + "}", k);
    const std::pair<const char*, const char*> choices[] = {
        {"auto", R"("auto")"}, {"none", R"("none")"}, {"required", R"("required")"},
        {"named", R"({"type": "function", "function": {"name": "get_weather"}})"}};
    for (const auto& [name, choice] : choices) {
      for (int k : {0, 2, 5}) {
        turn(std::string("tools_") + name + "_" + std::to_string(k), 0,
             "{" + user + ", " + tools + R"(, "tool_choice": )" + choice + "}", k);
      }
    }
    turn("tools_serial", 0, "{" + user + ", " + tools + R"(, "parallel_tool_calls": false})", 0);
    turn("json_schema", 0, "{" + user + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x", )"
                           R"("schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}})");
    turn("json_object", 0, "{" + user + R"(, "response_format": {"type": "json_object"}})");
    turn("reasoning_none", 0, "{" + user + R"(, "reasoning_format": "none"})", 4);
    turn("reasoning_qwen3", 1, "{" + user + R"(, "chat_template_kwargs": {"enable_thinking": true}})", 1);
    turn("kwargs_no_thinking", 0, "{" + user + R"(, "chat_template_kwargs": {"enable_thinking": false}})", 1);
    turn("documents", 0, "{" + user + R"(, "documents": [{"title": "a", "text": "b"}, {"text": "ab"}]})", 6);
    turn("tool_history", 2, R"({"messages": [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": null, )"
                            R"("tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", )"
                            R"("arguments": "{\"city\": \"Oslo\"}"}}]}, {"role": "tool", "tool_call_id": "call_1", )"
                            R"("content": "sunny"}, {"role": "user", "content": "ab"}], )" + tools + "}", 0);
    turn("tool_history_gpt_oss", 0, R"({"messages": [{"role": "user", "content": "w"}, {"role": "assistant", )"
                                    R"("reasoning_content": "think", "content": "", "tool_calls": [{"id": "c", "function": )"
                                    R"({"name": "search", "arguments": "not json"}}]}, {"role": "tool", "content": "x"}], )" +
                                        tools + "}", 5);
    turn("own_template", 0, "{" + user + "}", 0,
         "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if tools %}{{ tools | tojson }}{% endif %}"
         "{% if add_generation_prompt %}<|assistant|><think>{% endif %}");
    // Bad shapes: each must be a clean ZF_ERR_INVALID_ARGUMENT (or a template error).
    const char* bad[] = {
        "", "[]", "{}", R"({"messages": []})", R"({"messages": [{"role": "robot", "content": "a"}]})",
        R"({"messages": [{"role": "user"}]})", R"({"messages": [{"role": "user", "content": 1}]})",
        R"({"messages": [{"role": "user", "content": "a"}], "tools": {}})",
        R"({"messages": [{"role": "user", "content": "a"}], "tool_choice": "required"})",
        R"({"messages": [{"role": "user", "content": "a"}], "tool_choice": {"function": {"name": "nope"}}})",
        R"({"messages": [{"role": "user", "content": "a"}], "response_format": {"type": "json_schema"}})",
        R"({"messages": [{"role": "user", "content": "a"}], "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "nope"}}}})",
        R"({"messages": [{"role": "user", "content": "a"}], "reasoning_format": 3, "chat_template_kwargs": []})",
        R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})",
        R"({"messages": [{"role": "user", "content": "\ud800"}]})",
        R"({"messages": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) turn("bad_" + std::to_string(k), 0, bad[k]);
    turn("bad_template", 0, "{" + user + "}", 0, "{% for m in messages %}{{ m.content | nope }}");
    turn("raise_template", 0, "{" + user + "}", 0, "{{ raise_exception('no') }}");
  }
  return 0;
}
