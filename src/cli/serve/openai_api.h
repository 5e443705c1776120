// OpenAI's front door: POST /v1/chat/completions (a chat turn) and /v1/completions (a text
// completion), with the paths without /v1 as llama-server has them. The answer JSON and the SSE
// chunks are built by streaming.h.
#ifndef ZERFOO_CLI_SERVE_OPENAI_API_H
#define ZERFOO_CLI_SERVE_OPENAI_API_H

#include "front_door.h"

namespace cli::serve {

void AddOpenAiRoutes(FrontDoor& door);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_OPENAI_API_H
