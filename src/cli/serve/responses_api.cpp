// (being written: issue #43)
#include "responses_api.h"

namespace cli::serve {

void AddResponsesRoutes(FrontDoor&) {}

}  // namespace cli::serve
