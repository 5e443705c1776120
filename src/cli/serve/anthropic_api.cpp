// (being written: issue #43)
#include "anthropic_api.h"

namespace cli::serve {

void AddAnthropicRoutes(FrontDoor&) {}

}  // namespace cli::serve
