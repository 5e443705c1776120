// Built-in chat templates: the Jinja source in tokenizer.chat_template is recognized by its
// markers (as the reference does) and rendered by hand; no Jinja engine is embedded.
#include <cctype>
#include <string>

#include "tokenizer/tokenizer.h"

namespace zf::tok {
namespace {

enum class Family { kChatMl, kGemma, kLlama3, kPhi3, kMistralV7, kLlama2, kLlama2Sys, kZephyr };

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool Detect(std::string_view t, Family* f) {
  auto has = [t](const char* s) { return t.find(s) != std::string_view::npos; };
  if (t == "chatml" || (has("<|im_start|>") && !has("<|im_sep|>") && !has("<end_of_utterance>"))) {
    *f = Family::kChatMl;
  } else if (t == "mistral-v7" || ((t.rfind("mistral", 0) == 0 || has("[INST]")) && has("[SYSTEM_PROMPT]"))) {
    *f = Family::kMistralV7;
  } else if (t == "llama2" || (has("[INST]") && !has("[AVAILABLE_TOOLS]") && !has("' [INST] ' + system_message"))) {
    *f = has("<<SYS>>") ? Family::kLlama2Sys : Family::kLlama2;
  } else if (t == "phi3" || (has("<|assistant|>") && has("<|end|>"))) {
    *f = Family::kPhi3;
  } else if (t == "zephyr" || (has("<|user|>") && has("<|endoftext|>"))) {
    *f = Family::kZephyr;
  } else if (t == "gemma" || has("<start_of_turn>")) {
    *f = Family::kGemma;
  } else if (t == "llama3" || (has("<|start_header_id|>") && has("<|end_header_id|>"))) {
    *f = Family::kLlama3;
  } else {
    return false;
  }
  return true;
}

}  // namespace

Status ApplyChatTemplate(std::string_view chat_template, const std::vector<ChatMessage>& msgs,
                         bool add_assistant, std::string* out) {
  Family f;
  if (!Detect(chat_template, &f)) {
    return Unsupported("chat template not recognized (supported: ChatML, Gemma, Llama 2/3, "
                       "Mistral v7, Phi-3, Zephyr)");
  }
  std::string s;
  switch (f) {
    case Family::kChatMl:
      for (const auto& m : msgs) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_assistant) s += "<|im_start|>assistant\n";
      break;
    case Family::kGemma: {
      std::string system;  // Gemma has no system role: prepend it to the first user turn
      for (const auto& m : msgs) {
        if (m.role == "system") {
          system += Trim(m.content);
          continue;
        }
        std::string role = m.role == "assistant" ? "model" : m.role;
        s += "<start_of_turn>" + role + "\n";
        if (!system.empty() && role != "model") {
          s += system + "\n\n";
          system.clear();
        }
        s += Trim(m.content) + "<end_of_turn>\n";
      }
      if (add_assistant) s += "<start_of_turn>model\n";
      break;
    }
    case Family::kLlama3:
      for (const auto& m : msgs) {
        s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + Trim(m.content) + "<|eot_id|>";
      }
      if (add_assistant) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case Family::kPhi3:
      for (const auto& m : msgs) s += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      if (add_assistant) s += "<|assistant|>\n";
      break;
    case Family::kZephyr:
      for (const auto& m : msgs) s += "<|" + m.role + "|>\n" + m.content + "<|endoftext|>\n";
      if (add_assistant) s += "<|assistant|>\n";
      break;
    case Family::kMistralV7:
      for (const auto& m : msgs) {
        if (m.role == "system") s += "[SYSTEM_PROMPT] " + m.content + "[/SYSTEM_PROMPT]";
        else if (m.role == "user") s += "[INST] " + m.content + "[/INST]";
        else s += " " + m.content + "</s>";
      }
      break;
    case Family::kLlama2:
    case Family::kLlama2Sys: {
      bool inside = true;
      s += "[INST] ";
      for (const auto& m : msgs) {
        if (!inside) {
          inside = true;
          s += "[INST] ";
        }
        if (m.role == "system") {
          s += f == Family::kLlama2Sys ? "<<SYS>>\n" + m.content + "\n<</SYS>>\n\n" : m.content + "\n";
        } else if (m.role == "user") {
          s += m.content + " [/INST]";
        } else {
          s += m.content + "</s>";
          inside = false;
        }
      }
      break;
    }
  }
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace zf::tok
