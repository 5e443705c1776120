// Answering an ApiError over HTTP (kept apart from api_error.cpp, which the request parsers and
// their fuzz target use without httplib).
#include <httplib.h>

#include "api_error.h"

namespace cli::serve {

void SendError(httplib::Response& res, const ApiError& e, std::string (*format)(const ApiError&)) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(format(e), "application/json");
}

}  // namespace cli::serve
