#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace zf::tok {
namespace {

// tokenizer.ggml.token_type values.
uint32_t AttrFromType(int32_t type) {
  switch (type) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return 0;  // undefined
  }
}

// Texts the reference treats as end-of-turn / end-of-generation regardless of metadata.
const char* const kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                 "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
                                 "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
const char* const kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>",
                                 "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
                                 "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
                                 "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>",
                                 "<eos>", "<turn|>", "<|tool_response>",
                                 "<｜end▁of▁sentence｜>", "[e~["};
// Fill-in-the-middle tokens by text where the metadata names none, as the reference finds them
// (Qwen, SantaCoder, Granite, DeepSeek, CodeLlama's SPM "\u2581<PRE>", GLM-4.5, ...). Its
// pad/repo/separator tokens also end generation in the reference.
const char* const kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
                                    "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
const char* const kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
                                    "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
const char* const kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
                                    "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"};
const char* const kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const char* const kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                    "<reponame>"};
const char* const kFimSepTexts[] = {"<|file_sep|>"};

template <size_t N>
int32_t FirstPresent(const Vocab& v, const char* const (&texts)[N]) {
  int32_t best = -1;
  for (const char* t : texts) {
    int32_t id = v.Find(t);
    if (id >= 0 && (best < 0 || id < best)) best = id;
  }
  return best;
}

Status ReadSpecialId(const gguf::GgufFile& f, const char* key, int32_t n_vocab, int32_t* id) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr) return Status::Ok();
  uint32_t u = 0;
  // Out-of-range or negative ids keep the default, as the reference does (with a warning).
  if (f.GetU32(key, &u).ok() && u < static_cast<uint32_t>(n_vocab)) *id = static_cast<int32_t>(u);
  return Status::Ok();
}

Status ReadBool(const gguf::GgufFile& f, const char* key, bool* out) {
  if (f.Find(key) == nullptr) return Status::Ok();
  return f.GetBool(key, out);
}

}  // namespace

int32_t Vocab::Find(std::string_view s) const {
  auto it = text_to_id.find(s);
  return it == text_to_id.end() ? -1 : it->second;
}

int32_t Vocab::ByteToken(uint8_t byte) const {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", byte);
  int32_t id = Find(buf);
  if (id >= 0) return id;
  return Find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
}

int32_t Vocab::MergeRank(std::string_view left, std::string_view right) const {
  std::string key;
  key.reserve(left.size() + right.size() + 1);
  key.append(left).push_back('\0');
  key.append(right);
  auto it = merge_rank.find(key);
  return it == merge_rank.end() ? -1 : it->second;
}

Status Vocab::Load(const gguf::GgufFile& f, Vocab* v) {
  std::string_view model;
  Status s = f.GetString("tokenizer.ggml.model", &model);
  if (!s.ok()) return FormatError("tokenizer: tokenizer.ggml.model: " + s.message());
  std::vector<std::string_view> tokens;
  s = f.GetStringArray("tokenizer.ggml.tokens", &tokens);
  if (!s.ok()) return FormatError("tokenizer: tokenizer.ggml.tokens: " + s.message());
  if (tokens.empty() || tokens.size() > (1u << 24)) {
    return FormatError("tokenizer: tokenizer.ggml.tokens has " + std::to_string(tokens.size()) +
                       " entries");
  }
  const auto n = static_cast<int32_t>(tokens.size());

  if (model == "llama") {
    v->kind = VocabKind::kSpm;
    v->bos = 1; v->eos = 2; v->unk = 0;
    v->add_bos = true; v->add_space_prefix = true; v->clean_spaces = false;
  } else if (model == "gpt2" || model == "gemma4") {
    v->kind = VocabKind::kBpe;
    v->bos = 11; v->eos = 11;
    v->add_bos = false; v->add_space_prefix = false; v->clean_spaces = true;
    std::string_view pre;
    if (f.Find("tokenizer.ggml.pre") != nullptr) ZF_RETURN_IF_ERROR(f.GetString("tokenizer.ggml.pre", &pre));
    v->pre = pre.empty() ? "default" : std::string(pre);
    if (model == "gemma4") {
      // The reference ignores tokenizer.ggml.pre for this model and has no default ids.
      v->pre = "gemma4";
      v->bos = v->eos = -1;
      v->spm_style_bpe = true;
      v->whole_newline_words = true;
    }
    // Per pre-tokenizer rules of the reference (which ones keep " ," spacing, etc.).
    static const char* const kNoClean[] = {"deepseek-llm", "deepseek-coder", "deepseek-v3",
                                           "qwen2", "qwen35", "deepseek-r1-qwen", "smollm", "command-r",
                                           "poro-chat", "viking", "tekken", "codeshell",
                                           "exaone", "minerva", "chameleon", "gpt-4o", "llama4", "kanana2",
                                           "talkie"};
    for (const char* p : kNoClean) if (v->pre == p) v->clean_spaces = false;
    static const char* const kLlama3[] = {"llama3", "llama-v3", "llama-bpe", "falcon3",
                                          "falcon-h1", "pixtral", "lfm2"};
    for (const char* p : kLlama3) {
      if (v->pre == p) { v->ignore_merges = true; v->add_bos = true; }
    }
    if (v->pre == "tekken") { v->ignore_merges = true; v->add_bos = true; }
  } else if (model == "bert") {
    // WordPiece; the reference's defaults are BERT's ids ([CLS] 101, [UNK] 100, [SEP] 102).
    v->kind = VocabKind::kWpm;
    v->bos = 101; v->eos = -1; v->unk = 100; v->sep = 102; v->pad = 0;
    v->add_bos = true; v->add_sep = true; v->add_space_prefix = false; v->clean_spaces = true;
  } else {
    return Unsupported("tokenizer: unsupported tokenizer model '" + std::string(model) +
                       "' (supported: llama (SentencePiece), gpt2 (byte-level BPE), bert (WordPiece), "
                       "gemma4 (BPE over U+2581-escaped text))");
  }

  v->text.reserve(tokens.size());
  v->text_to_id.reserve(tokens.size() * 2);
  for (int32_t i = 0; i < n; ++i) {
    v->text.emplace_back(tokens[i]);
    v->text_to_id.emplace(v->text.back(), i);  // first occurrence wins
    v->max_token_len = std::max(v->max_token_len, v->text.back().size());
  }
  v->score.assign(tokens.size(), 0.0f);
  if (f.Find("tokenizer.ggml.scores") != nullptr) {
    std::vector<float> scores;
    ZF_RETURN_IF_ERROR(f.GetF32Array("tokenizer.ggml.scores", &scores));
    if (scores.size() != tokens.size()) {
      return FormatError("tokenizer: tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                         " entries but there are " + std::to_string(n) + " tokens");
    }
    v->score = std::move(scores);
  }
  v->attr.assign(tokens.size(), kAttrNormal);
  if (f.Find("tokenizer.ggml.token_type") != nullptr) {
    std::vector<int32_t> types;
    ZF_RETURN_IF_ERROR(f.GetI32Array("tokenizer.ggml.token_type", &types));
    if (types.size() != tokens.size()) {
      return FormatError("tokenizer: tokenizer.ggml.token_type has " +
                         std::to_string(types.size()) + " entries but there are " +
                         std::to_string(n) + " tokens");
    }
    for (int32_t i = 0; i < n; ++i) v->attr[i] = AttrFromType(types[i]);
  }

  if (v->kind == VocabKind::kBpe) {
    std::vector<std::string_view> merges;
    s = f.GetStringArray("tokenizer.ggml.merges", &merges);
    if (!s.ok()) return FormatError("tokenizer: BPE vocabulary needs tokenizer.ggml.merges: " + s.message());
    v->merge_rank.reserve(merges.size() * 2);
    for (size_t i = 0; i < merges.size(); ++i) {
      std::string_view m = merges[i];
      size_t pos = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
      std::string key;
      if (pos != std::string_view::npos) {
        key.append(m.substr(0, pos)).push_back('\0');
        key.append(m.substr(pos + 1));
      } else {
        key.push_back('\0');  // the reference keeps malformed merges as ("", "")
      }
      v->merge_rank.emplace(std::move(key), static_cast<int32_t>(i));
    }
  }

  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.bos_token_id", n, &v->bos));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.eos_token_id", n, &v->eos));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.eot_token_id", n, &v->eot));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.eom_token_id", n, &v->eom));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.unknown_token_id", n, &v->unk));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.padding_token_id", n, &v->pad));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.seperator_token_id", n, &v->sep));
  // FIM ids; the older prefix/suffix/middle keys come after the new ones, as in the reference's
  // list (where both are present the older one wins there too).
  FimTokens& fim = v->fim;
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.fim_pre_token_id", n, &fim.pre));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.fim_suf_token_id", n, &fim.suf));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.fim_mid_token_id", n, &fim.mid));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.fim_pad_token_id", n, &fim.pad));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.fim_rep_token_id", n, &fim.rep));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.fim_sep_token_id", n, &fim.sep));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.prefix_token_id", n, &fim.pre));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.suffix_token_id", n, &fim.suf));
  ZF_RETURN_IF_ERROR(ReadSpecialId(f, "tokenizer.ggml.middle_token_id", n, &fim.mid));
  // BertNormalizer options: lowercase defaults to on, strip_accents to lowercase, as in the
  // reference (older BERT files carry neither key).
  v->lowercase = true;
  ZF_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.normalizer.lowercase", &v->lowercase));
  v->strip_accents = v->lowercase;
  ZF_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.normalizer.strip_accents", &v->strip_accents));
  ZF_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_bos_token", &v->add_bos));
  ZF_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_eos_token", &v->add_eos));
  ZF_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_sep_token", &v->add_sep));
  ZF_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix));
  // The reference always adds BOS for Gemma 4, whatever the file says.
  if (v->pre == "gemma4") v->add_bos = true;
  if (v->bos >= n) v->bos = -1;
  if (v->eos >= n) v->eos = -1;
  if (v->sep >= n) v->sep = -1;
  if (v->unk >= n) v->unk = -1;
  if (v->kind == VocabKind::kWpm && (v->bos < 0 || v->sep < 0 || v->unk < 0)) {
    return FormatError("tokenizer: WordPiece vocabulary needs [CLS], [SEP] and [UNK] ids within the vocabulary");
  }
  if (v->add_bos && v->bos < 0) return FormatError("tokenizer: add_bos_token set but no BOS token");

  // Text-based fixes the reference applies (see header comment).
  if (v->eot < 0) v->eot = FirstPresent(*v, kEotTexts);
  if (v->eot >= 0) v->attr[v->eot] |= kAttrControl;
  // FIM tokens the metadata does not name are found by text, and made control tokens where the
  // file types them otherwise (as the reference does).
  auto by_text = [v](int32_t* id, int32_t found) {
    if (*id >= 0 || found < 0) return;
    *id = found;
    if (!(v->attr[found] & kAttrControl)) v->attr[found] = kAttrControl;
  };
  by_text(&fim.pre, FirstPresent(*v, kFimPreTexts));
  by_text(&fim.suf, FirstPresent(*v, kFimSufTexts));
  by_text(&fim.mid, FirstPresent(*v, kFimMidTexts));
  by_text(&fim.pad, FirstPresent(*v, kFimPadTexts));
  by_text(&fim.rep, FirstPresent(*v, kFimRepTexts));
  by_text(&fim.sep, FirstPresent(*v, kFimSepTexts));
  for (int32_t id : {fim.pad, fim.rep, fim.sep}) {
    if (id >= 0) v->eog.insert(id);
  }
  for (const char* t : kEogTexts) {
    int32_t id = v->Find(t);
    if (id < 0) continue;
    v->eog.insert(id);
    v->attr[id] |= kAttrControl;
  }
  for (int32_t id : {v->eos, v->eot, v->eom}) if (id >= 0) v->eog.insert(id);
  // gpt-oss (o200k_harmony) and solar-open: <|end|> closes one message of a turn (the analysis
  // before the answer), not the generation. Where <|return|> and <|call|> (or <|calls|> and
  // <|flush|>) end turns, it is an ordinary user-defined token, as the reference makes it.
  {
    auto eog_text = [v](const char* t) {
      const int32_t id = v->Find(t);
      return id >= 0 && v->eog.count(id) > 0;
    };
    const int32_t end = v->Find("<|end|>");
    if (end >= 0 && v->eog.count(end) > 0 &&
        ((eog_text("<|return|>") && (eog_text("<|call|>") || eog_text("<|calls|>"))) ||
         ((eog_text("<|call|>") || eog_text("<|calls|>")) && eog_text("<|flush|>")))) {
      v->eog.erase(end);
      if (v->eot == end) v->eot = -1;
      v->attr[end] = (v->attr[end] & ~kAttrControl) | kAttrUserDefined;
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    if ((v->attr[i] & kAttrControl) && v->text[i].find("unused") != std::string::npos) {
      v->attr[i] |= kAttrUnused;
    }
  }

  for (int32_t i = 0; i < n; ++i) {
    if (v->attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      v->special_tokens.push_back(i);
    }
  }
  std::stable_sort(v->special_tokens.begin(), v->special_tokens.end(),
                   [v](int32_t a, int32_t b) { return v->text[a].size() > v->text[b].size(); });
  return Status::Ok();
}

std::vector<Fragment> PartitionSpecial(const Vocab& vocab, std::string_view text,
                                       bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});
  std::vector<Fragment> next;
  for (int32_t id : vocab.special_tokens) {
    const uint32_t attr = vocab.attr[id];
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string& tok = vocab.text[id];
    if (tok.empty()) continue;
    bool any = false;
    for (const Fragment& f : frags) {
      if (f.token >= 0 || text.substr(f.offset, f.length).find(tok) == std::string_view::npos) {
        continue;
      }
      any = true;
      break;
    }
    if (!any) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0) { next.push_back(f); continue; }
      size_t start = f.offset;
      size_t end = f.offset + f.length;
      while (start < end) {
        size_t m = text.substr(0, end).find(tok, start);
        if (m == std::string_view::npos) {
          next.push_back({-1, start, end - start});
          break;
        }
        size_t left_end = m;
        if (attr & kAttrLstrip) {
          while (left_end > start && std::isspace(static_cast<unsigned char>(text[left_end - 1]))) --left_end;
        }
        if (left_end > start) next.push_back({-1, start, left_end - start});
        next.push_back({id, m, tok.size()});
        start = m + tok.size();
        if (attr & kAttrRstrip) {
          while (start < end && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
        }
      }
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace zf::tok
