// --allow-image-urls: an image part's http(s) URL fetched by the server (cpp-httplib's client),
// with a timeout and the per-image size limit; every failure is a 400 naming the part.
#ifndef ZERFOO_CLI_SERVE_IMAGE_FETCH_H
#define ZERFOO_CLI_SERVE_IMAGE_FETCH_H

#include "image_request.h"

namespace cli::serve {

// A fetcher whose connection and each read give up after `timeout_s` seconds; redirects are
// followed. https needs a build of cpp-httplib with OpenSSL (Debian's has it); without, an https
// URL is refused by name.
ImageFetchFn MakeImageFetcher(int timeout_s);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_IMAGE_FETCH_H
