// Fetching an image URL for a chat request (--allow-image-urls).
#include "image_fetch.h"

#include <httplib.h>

#include <cctype>

namespace cli::serve {

ImageFetchFn MakeImageFetcher(int timeout_s) {
  return [timeout_s](const std::string& url, const std::string& field, size_t max_bytes) {
    auto fail = [&](const std::string& why) { return BadRequest("invalid_value", "'" + field + "': " + why); };
    const size_t scheme_end = url.find("://");
    const size_t path_at = url.find('/', scheme_end + 3);
    std::string scheme = url.substr(0, scheme_end);  // "http" or "https" in any case
    for (char& c : scheme) c = char(std::tolower(static_cast<unsigned char>(c)));
    const std::string base = scheme + url.substr(scheme_end, path_at - scheme_end);
    const std::string path = path_at == std::string::npos ? "/" : url.substr(path_at);
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
    if (scheme == "https") {
      throw fail("https image URLs are not supported by this build (cpp-httplib without OpenSSL); use http or a data: URL");
    }
#endif
    httplib::Client client(base);
    if (!client.is_valid()) throw fail("'" + url + "' is not a URL this server can fetch");
    client.set_connection_timeout(timeout_s, 0);
    client.set_read_timeout(timeout_s, 0);
    client.set_write_timeout(timeout_s, 0);
    client.set_follow_location(true);
    std::string body;
    bool too_large = false;
    int status = 0;
    const httplib::Result r = client.Get(
        path, httplib::Headers{{"Accept", "image/*"}},
        [&](const httplib::Response& res) {
          status = res.status;
          return true;
        },
        [&](const char* data, size_t n) {
          if (status / 100 != 2) return true;  // an error page is read, not kept
          if (body.size() + n > max_bytes) {
            too_large = true;
            return false;
          }
          body.append(data, n);
          return true;
        });
    if (too_large) {
      throw ApiError{413, "invalid_request_error", "image_too_large",
                     "'" + field + "': the image at '" + url + "' is larger than this server's limit of " +
                         std::to_string(max_bytes) + " bytes per image (--image-max-mb)"};
    }
    if (!r) throw fail("fetching '" + url + "' failed: " + httplib::to_string(r.error()));
    if (r->status / 100 != 2) throw fail("fetching '" + url + "' answered HTTP " + std::to_string(r->status));
    return body;
  };
}

}  // namespace cli::serve
