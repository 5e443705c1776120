// The chat template renderer: template text and messages from the input ("template\0role\0
// content\0role\0content..."; byte 0 holds the add-assistant flag). Unknown templates are
// ZF_ERR_UNSUPPORTED; a rendering of valid UTF-8 inputs is valid UTF-8.
#include <string>
#include <vector>

#include "common/utf8.h"
#include "fuzz_common.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const bool add_assistant = (data[0] & 1) != 0;
  std::vector<std::string> parts;
  std::string cur;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(char(data[i]));
    }
  }
  parts.push_back(cur);
  for (const std::string& s : parts) {
    if (!zf::IsValidUtf8(s)) return 0;  // the C API validates roles and contents first
  }
  std::vector<zf::tok::ChatMessage> msgs;
  for (size_t i = 1; i + 1 < parts.size(); i += 2) msgs.push_back({parts[i], parts[i + 1]});
  std::string out;
  const zf::Status st = zf::tok::ApplyChatTemplate(parts[0], msgs, add_assistant, &out);
  if (st.ok()) zf::fuzz::Check(zf::IsValidUtf8(out), "rendered text is valid UTF-8");
  return 0;
}
