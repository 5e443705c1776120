// libFuzzer entry point for the chat-template engine: the input's first line is a JSON object
// of variables (invalid JSON: no variables), the rest is the template. Any input must end in
// output or a jinja::Error, within the limits. Not built by default; e.g.
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
//     tests/fuzz/jinja_fuzz.cpp src/jinja/*.cpp -o jinja_fuzz && ./jinja_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string>

#include "jinja/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string vars = nl == std::string::npos ? std::string() : in.substr(0, nl);
  std::string src = nl == std::string::npos ? in : in.substr(nl + 1);
  zf::jinja::Limits lim;
  lim.max_output_bytes = 1 << 20;
  lim.max_steps = 100000;
  lim.now = 0;
  try {
    zf::jinja::Value v = zf::jinja::Value::MakeDict();
    try {
      zf::jinja::Value parsed = zf::jinja::FromJson(vars);
      if (parsed.is_dict()) v = parsed;
    } catch (const zf::jinja::Error&) {
    }
    zf::jinja::Template t(src);
    (void)t.Render(v, lim);
  } catch (const zf::jinja::Error&) {
  }
  return 0;
}
