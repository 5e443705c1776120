// (being written: issue #43)
#include "infill_api.h"

namespace cli::serve {

void AddInfillRoutes(FrontDoor&) {}

}  // namespace cli::serve
