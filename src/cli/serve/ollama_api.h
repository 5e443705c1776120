// Ollama's API: /api/chat, /api/generate, /api/embed, /api/tags, /api/show, /api/ps, /api/version.
#ifndef ZERFOO_CLI_SERVE_OLLAMA_API_H
#define ZERFOO_CLI_SERVE_OLLAMA_API_H

#include "front_door.h"

namespace cli::serve {

void AddOllamaRoutes(FrontDoor& door);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_OLLAMA_API_H
