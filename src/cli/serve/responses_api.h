// OpenAI's Responses API: POST /v1/responses.
#ifndef ZERFOO_CLI_SERVE_RESPONSES_API_H
#define ZERFOO_CLI_SERVE_RESPONSES_API_H

#include "front_door.h"

namespace cli::serve {

void AddResponsesRoutes(FrontDoor& door);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_RESPONSES_API_H
