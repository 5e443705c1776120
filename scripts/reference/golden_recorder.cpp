// Records golden outputs of the reference (llama.cpp) for one model as JSON on stdout.
// Built and run by record_goldens.sh against the reference's libllama; not part of zerfoo.
// Per prompt: prompt ids (BOS as the model asks), N greedy tokens (argmax, EOS ignored) and
// the top-5 logits at a few steps; tokenizer expectations; chat-template renderings.
#include <llama.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

const int kGen = 64;
const int kTopkAt[] = {0, 1, 8, 32, 63};
const char* kPrompts[] = {
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
};
const char* kTexts[] = {
    "Hello world", " Hello world", "Hello, world! How's it going?", "  two  spaces\tand tab\n\nnew",
    "1234567890 3.14159 -42", "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88",
    "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
    "emoji \xF0\x9F\xA6\x99\xF0\x9F\x9A\x80 end", "<start_of_turn>user\nHi<end_of_turn>",
    "<|im_start|>user\nHi<|im_end|>", "<s></s><eos><bos>", "don't won't I'll we've they're",
    "mixed\r\nlines\r\n", "",
};

std::string Json(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += static_cast<char>(c); }
    else if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += static_cast<char>(c);
  }
  return o + "\"";
}

// Token pieces may be partial UTF-8 sequences (byte tokens), which JSON cannot hold: hex.
std::string Hex(const std::string& s) {
  std::string o = "\"";
  char b[4];
  for (unsigned char c : s) { std::snprintf(b, sizeof b, "%02x", c); o += b; }
  return o + "\"";
}

// Replaces bytes that do not form valid UTF-8 with U+FFFD (informational text fields only).
std::string ValidUtf8(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) { o.append(s, i, n); i += n; } else { o += "\xEF\xBF\xBD"; ++i; }
  }
  return o;
}

std::string Ids(const std::vector<llama_token>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + std::to_string(v[i]);
  return o + "]";
}

std::vector<llama_token> Tokenize(const llama_vocab* vocab, const std::string& t, bool add, bool special) {
  std::vector<llama_token> ids(t.size() + 16);
  int n = llama_tokenize(vocab, t.data(), static_cast<int32_t>(t.size()), ids.data(),
                         static_cast<int32_t>(ids.size()), add, special);
  ids.resize(n < 0 ? 0 : n);
  return ids;
}

std::string Piece(const llama_vocab* vocab, llama_token t, bool special) {
  char buf[512];
  int n = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, special);
  return std::string(buf, n < 0 ? 0 : n);
}

std::string Detok(const llama_vocab* vocab, const std::vector<llama_token>& ids, bool remove_special) {
  std::vector<char> buf(ids.size() * 64 + 64);
  int n = llama_detokenize(vocab, ids.data(), static_cast<int32_t>(ids.size()), buf.data(),
                           static_cast<int32_t>(buf.size()), remove_special, false);
  return std::string(buf.data(), n < 0 ? 0 : n);
}

std::string Chat(const char* tmpl, const std::vector<llama_chat_message>& msgs) {
  std::vector<char> buf(1 << 16);
  int n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
  return std::string(buf.data(), n < 0 ? 0 : n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf FALLBACK_TEMPLATE\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);

  std::printf("{\n \"reference\": \"llama.cpp (llama-cpp-python 0.3.36 sdist)\",\n \"n_gen\": %d,\n \"prompts\": [\n", kGen);
  bool first = true;
  for (const char* prompt : kPrompts) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context* ctx = llama_init_from_model(model, cp);
    std::vector<llama_token> ids = Tokenize(vocab, prompt, true, false);
    std::vector<llama_token> cur = ids, gen;
    std::string topk = "[";
    for (int step = 0; step < kGen; ++step) {
      if (llama_decode(ctx, llama_batch_get_one(cur.data(), static_cast<int32_t>(cur.size()))) != 0) return 1;
      const float* logits = llama_get_logits_ith(ctx, -1);
      std::vector<int> order(n_vocab);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](int a, int b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
      if (std::find(std::begin(kTopkAt), std::end(kTopkAt), step) != std::end(kTopkAt)) {
        char b[64];
        topk += std::string(topk.size() > 1 ? "," : "") + "{\"step\":" + std::to_string(step) + ",\"ids\":[";
        for (int k = 0; k < 5; ++k) topk += (k ? "," : "") + std::to_string(order[k]);
        topk += "],\"logits\":[";
        for (int k = 0; k < 5; ++k) { std::snprintf(b, sizeof b, "%s%.5f", k ? "," : "", logits[order[k]]); topk += b; }
        topk += "]}";
      }
      gen.push_back(order[0]);
      cur.assign(1, order[0]);
    }
    topk += "]";
    std::printf("%s  {\"text\": %s,\n   \"prompt_ids\": %s,\n   \"greedy\": %s,\n   \"greedy_text\": %s,\n   \"topk\": %s}",
                first ? "" : ",\n", Json(prompt).c_str(), Ids(ids).c_str(), Ids(gen).c_str(),
                Json(ValidUtf8(Detok(vocab, gen, false))).c_str(), topk.c_str());
    first = false;
    llama_free(ctx);
  }
  std::printf("\n ],\n \"tokenizer\": [\n");
  first = true;
  for (const char* text : kTexts) {
    std::vector<llama_token> plain = Tokenize(vocab, text, false, false);
    std::vector<llama_token> special = Tokenize(vocab, text, true, true);
    std::string pieces = "[";
    for (size_t i = 0; i < special.size(); ++i) pieces += (i ? "," : "") + Hex(Piece(vocab, special[i], true));
    pieces += "]";
    std::printf("%s  {\"text\": %s, \"plain\": %s, \"special\": %s,\n   \"detok_plain\": %s, \"detok_special_removed\": %s, \"pieces_render_special_hex\": %s}",
                first ? "" : ",\n", Json(text).c_str(), Ids(plain).c_str(), Ids(special).c_str(),
                Json(Detok(vocab, plain, false)).c_str(), Json(Detok(vocab, special, true)).c_str(), pieces.c_str());
    first = false;
  }
  const char* tmpl = llama_model_chat_template(model, nullptr);
  if (!tmpl) tmpl = argv[2];
  std::vector<std::vector<llama_chat_message>> chats = {
      {{"user", "Hi there"}},
      {{"system", "You are terse."}, {"user", "Name a color."}, {"assistant", "Blue."}, {"user", "Another?"}},
  };
  std::printf("\n ],\n \"chat\": [\n");
  first = true;
  for (const auto& msgs : chats) {
    std::string m = "[";
    for (size_t i = 0; i < msgs.size(); ++i) {
      m += std::string(i ? "," : "") + "{\"role\":" + Json(msgs[i].role) + ",\"content\":" + Json(msgs[i].content) + "}";
    }
    std::printf("%s  {\"messages\": %s, \"rendered\": %s}", first ? "" : ",\n", (m + "]").c_str(),
                Json(Chat(tmpl, msgs)).c_str());
    first = false;
  }
  std::printf("\n ]\n}\n");
  llama_model_free(model);
  return 0;
}
