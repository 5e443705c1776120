// Tokenizer built from GGUF metadata: SentencePiece-style (tokenizer.ggml.model = "llama") and
// byte-level BPE ("gpt2", pre-tokenizer chosen by tokenizer.ggml.pre), WordPiece ("bert"),
// special/control tokens,
// add_bos/add_eos rules. Behaviour matches the reference (llama.cpp) token for token.
//
// Thread-safety: immutable after Create; Encode/Decode may run concurrently from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "tokenizer/vocab.h"

namespace zf::tok {

// tokenizer.ggml.token_type values (stable, from the GGUF format).
enum class TokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds from tokenizer.ggml.* metadata. kFormat for inconsistent metadata (array lengths,
  // out-of-range ids), kUnsupported for an unknown tokenizer model or pre-tokenizer.
  static Status Create(const gguf::GgufFile& file, std::unique_ptr<Tokenizer>* out);

  // UTF-8 text to ids. add_special: BOS/EOS per the model's add_bos/add_eos; parse_special:
  // text of special tokens becomes those tokens. kInvalidUtf8 for malformed input.
  virtual Status Encode(std::string_view text, bool add_special, bool parse_special,
                        std::vector<int32_t>* out) const = 0;

  // Bytes of one token as the reference's token_to_piece renders them (byte tokens give their
  // raw byte, SPM "▁" becomes " "); control tokens give "" unless render_special.
  virtual std::string TokenToPiece(int32_t id, bool render_special) const = 0;

  // Ids to text as the reference's detokenize does (remove_special drops a leading BOS and a
  // trailing EOS; SPM strips the leading space it added). kInvalidArgument for ids out of range.
  virtual Status Decode(const int32_t* ids, size_t n, bool remove_special, bool render_special,
                        std::string* out) const = 0;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos() const = 0;  // -1 if none
  virtual int32_t eos() const = 0;
  virtual int32_t eot() const = 0;
  virtual int32_t sep() const = 0;  // WordPiece [SEP]; -1 if none
  virtual const FimTokens& fim() const = 0;  // fill-in-the-middle ids (-1 where absent)
  // The special tokens the model's metadata asks for around texts (rerank pairs are framed by them).
  virtual bool add_bos() const = 0;
  virtual bool add_eos() const = 0;
  virtual bool add_sep() const = 0;
  virtual bool IsEndOfGeneration(int32_t id) const = 0;  // EOS, EOT and other end tokens
  virtual bool IsControl(int32_t id) const = 0;
  virtual const std::string& TokenText(int32_t id) const = 0;  // raw vocabulary string
};


}  // namespace zf::tok
