// The image parts of chat requests (src/cli/serve/image_request.cpp, src/cli/data_url.cpp): the
// input is an image part's URL (a data: URL, plain base64, anything). Invariants: ResolveImages
// returns or throws ApiError (400 or 413 with a message naming the part), nothing else; an accepted URL
// is rewritten as "data:image/<png|jpeg|gif|bmp>;base64,..." whose bytes decode again to at most
// the limit; base64 round-trips.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/data_url.h"
#include "cli/serve/image_request.h"
#include "fuzz_common.h"

using zf::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  cli::serve::ImagePolicy policy;
  policy.mmproj = reinterpret_cast<const zf_mmproj*>(&policy);  // never dereferenced here
  policy.max_bytes = 4096;
  nlohmann::json messages = nlohmann::json::array();
  messages.push_back({{"role", "user"},
                      {"content", nlohmann::json::array({{{"type", "image_url"}, {"image_url", {{"url", url}}}}})}});
  try {
    const int n = cli::serve::ResolveImages(&messages, "fuzz", policy);
    Check(n == 1, "one image part resolved");
    const std::string out = messages[0]["content"][0]["image_url"]["url"].get<std::string>();
    std::string type, b64, why, bytes;
    Check(cli::ParseDataUrl(out, &type, &b64, &why), "the rewrite is a data: URL");
    Check(type == "image/png" || type == "image/jpeg" || type == "image/gif" || type == "image/bmp", "a known type");
    Check(cli::Base64Decode(b64, &bytes, &why), "its base64 decodes");
    Check(!bytes.empty() && bytes.size() <= policy.max_bytes, "within the limit");
    Check(cli::Base64Encode(bytes.data(), bytes.size()) == b64, "canonical base64");
  } catch (const cli::serve::ApiError& e) {
    Check((e.status == 400 || e.status == 413) && !e.message.empty(), "a 400/413 with a message");
    Check(e.message.find("messages[0].content[0]") != std::string::npos, "the message names the part");
  }
  // Base64 round trip of the raw bytes.
  std::string back, why;
  Check(cli::Base64Decode(cli::Base64Encode(data, size), &back, &why) && back == url, "base64 round trip");
  return 0;
}
