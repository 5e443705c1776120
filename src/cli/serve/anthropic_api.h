// Anthropic's Messages API: POST /v1/messages, /v1/messages/count_tokens.
#ifndef ZERFOO_CLI_SERVE_ANTHROPIC_API_H
#define ZERFOO_CLI_SERVE_ANTHROPIC_API_H

#include "front_door.h"

namespace cli::serve {

void AddAnthropicRoutes(FrontDoor& door);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_ANTHROPIC_API_H
