// Where GGUF files lie on disk: the models of a folder and the vision/audio projector (mmproj)
// that belongs to a model, by the layouts llama-server's router reads. Shared by the CLI's
// generate/chat (a projector found beside -m) and the server's --models-dir.
#ifndef ZERFOO_CLI_MODEL_FILES_H
#define ZERFOO_CLI_MODEL_FILES_H

#include <string>
#include <utility>
#include <vector>

namespace cli {

bool IsDir(const std::string& path);

// The entries of `dir` (without "." and ".."), sorted; empty when it cannot be read.
std::vector<std::string> DirEntries(const std::string& dir);

// A projector's file name: mmproj*.gguf.
bool IsMmprojName(const std::string& name);

// The models directly in `dir`, as name -> first file: NAME.gguf as NAME, a split set
// (NAME-00001-of-0000N.gguf ...) as NAME by its first part; mmproj* files are no models.
std::vector<std::pair<std::string, std::string>> GgufsIn(const std::string& dir);

// The projector of model `name` in `dir`: in the model's own folder (own_folder) the one
// mmproj*.gguf there; beside a NAME.gguf among others, mmproj-NAME.gguf. "" when there is none
// (or, in a folder, more than one: which would be a guess).
std::string ProjectorIn(const std::string& dir, const std::string& name, bool own_folder);

// The projector for the model file `model_path` by the same two rules: mmproj-NAME.gguf beside
// it, else the one mmproj*.gguf of a folder whose only model it is. "" when none is found.
std::string ProjectorBeside(const std::string& model_path);

}  // namespace cli

#endif  // ZERFOO_CLI_MODEL_FILES_H
