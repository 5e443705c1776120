// llama-server's LoRA routes: GET /lora-adapters (the model's adapters with their scales) and
// POST /lora-adapters ([{"id", "scale"}]: the scales requests get unless they give their own
// "lora"; unlisted adapters 0). The default model's adapters (--lora); in a preset, a model's own.
#ifndef ZERFOO_CLI_SERVE_LORA_API_H
#define ZERFOO_CLI_SERVE_LORA_API_H

#include "front_door.h"

namespace cli::serve {

void AddLoraRoutes(FrontDoor& door);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_LORA_API_H
