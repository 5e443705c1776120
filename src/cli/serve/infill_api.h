// Fill-in-the-middle: llama-server's POST /infill, built from the model's FIM tokens.
#ifndef ZERFOO_CLI_SERVE_INFILL_API_H
#define ZERFOO_CLI_SERVE_INFILL_API_H

#include "front_door.h"

namespace cli::serve {

void AddInfillRoutes(FrontDoor& door);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_INFILL_API_H
