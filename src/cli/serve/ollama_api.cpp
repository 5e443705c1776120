// (being written: issue #43)
#include "ollama_api.h"

namespace cli::serve {

void AddOllamaRoutes(FrontDoor&) {}

}  // namespace cli::serve
