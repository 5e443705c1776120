// The models a `zerfoo serve` can serve: every -m PATH[=ALIAS], every GGUF of --models-dir,
// every section of --models-preset, each with its own options (the server's, overridden by its
// preset section). Only names and files here: loading is model_registry.h's.
#ifndef ZERFOO_CLI_SERVE_MODEL_LIST_H
#define ZERFOO_CLI_SERVE_MODEL_LIST_H

#include <string>
#include <vector>

#include "options.h"

namespace cli::serve {

struct ModelSpec {
  std::string alias;  // the name requests use
  ServeOptions o;     // o.model is its file, o.alias its name; ctx, parallel, threads, ... its own
};

// In order: the -m models (the first is the default model), the preset's sections, the
// directory's models (sorted by name). Throws UsageError for a name given twice, an unreadable
// directory or preset, or a bad preset line (naming the file and line).
std::vector<ModelSpec> ModelList(const ServeOptions& o);

// A --models-preset file's sections applied over `base` (exposed for tests and the fuzz-free
// parse): [NAME] then key = value lines; '#' or ';' start a comment (after a value: after a
// blank). `dir` resolves relative
// paths. Throws UsageError naming `file`:line.
std::vector<ModelSpec> ParsePreset(const std::string& text, const std::string& file, const std::string& dir,
                                   const ServeOptions& base);

// The models of a directory: *.gguf files named without ".gguf", split files
// (NAME-00001-of-0000N.gguf) as NAME by their first part, and a subfolder holding one model (or
// one split set) as the folder's name. mmproj* files are no models: a folder's one mmproj*.gguf
// is its model's vision projector, and so is mmproj-NAME.gguf beside a top-level NAME.gguf.
std::vector<ModelSpec> DirectoryModels(const std::string& dir, const ServeOptions& base);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_MODEL_LIST_H
