// The reference's (llama.cpp's) tokenization of test texts, in its test-tokenizer-0 format: for a
// vocabulary file and a .inp file (texts separated by "\n__ggml_vocab_test__\n" lines), one line
// per text with " id" for each token (no special tokens added, none parsed). Used to record
// tests/data/tokenizer/*.out for vocabularies llama.cpp ships no vectors for.
//   tokenize_recorder VOCAB.gguf TEXTS.inp > VECTORS.out
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf TEXTS.inp\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 3;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream f(argv[2], std::ios::binary);
  const std::string inp((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0, next; (next = inp.find(sep, pos)) != std::string::npos; pos = next + sep.size()) {
    const std::string text = inp.substr(pos, next - pos);
    std::vector<llama_token> ids(text.size() * 4 + 16);
    const int n = llama_tokenize(vocab, text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()), false, false);
    if (n < 0) return 4;
    for (int i = 0; i < n; ++i) std::printf(" %d", ids[size_t(i)]);
    std::printf("\n");
  }
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
