// Model and projector files on disk (model_files.h).
#include "model_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

namespace cli {

namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool IsFile(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// "NAME-00001-of-00003" -> "NAME" and whether it is the first part; other stems unchanged.
std::string SplitBase(const std::string& stem, bool* split, bool* first) {
  *split = *first = false;
  // -DDDDD-of-DDDDD at the end of the stem.
  if (stem.size() < 16) return stem;
  const std::string tail = stem.substr(stem.size() - 15);
  auto digits = [&](size_t at) {
    for (size_t i = at; i < at + 5; ++i) {
      if (tail[i] < '0' || tail[i] > '9') return false;
    }
    return true;
  };
  if (tail[0] != '-' || !digits(1) || tail.compare(6, 4, "-of-") != 0 || !digits(10)) return stem;
  *split = true;
  *first = tail.compare(1, 5, "00001") == 0;
  return stem.substr(0, stem.size() - 15);
}

}  // namespace

bool IsDir(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool IsMmprojName(const std::string& name) { return name.rfind("mmproj", 0) == 0 && EndsWith(name, ".gguf"); }

std::vector<std::pair<std::string, std::string>> GgufsIn(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : DirEntries(dir)) {
    if (!EndsWith(n, ".gguf") || IsMmprojName(n)) continue;
    const std::string path = dir + "/" + n;
    if (IsDir(path)) continue;
    bool split = false, first = false;
    const std::string name = SplitBase(n.substr(0, n.size() - 5), &split, &first);
    if (split && !first) continue;
    out.emplace_back(name, path);
  }
  return out;
}

std::string ProjectorIn(const std::string& dir, const std::string& name, bool own_folder) {
  if (!own_folder) {
    const std::string path = dir + "/mmproj-" + name + ".gguf";
    return IsFile(path) ? path : std::string();
  }
  std::string found;
  for (const std::string& n : DirEntries(dir)) {
    if (!IsMmprojName(n) || IsDir(dir + "/" + n)) continue;
    if (!found.empty()) return std::string();
    found = dir + "/" + n;
  }
  return found;
}

std::string ProjectorBeside(const std::string& model_path) {
  const size_t slash = model_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : model_path.substr(0, slash == 0 ? 1 : slash);
  std::string file = slash == std::string::npos ? model_path : model_path.substr(slash + 1);
  if (!EndsWith(file, ".gguf")) return std::string();
  bool split = false, first = false;
  const std::string name = SplitBase(file.substr(0, file.size() - 5), &split, &first);
  std::string found = ProjectorIn(dir, name, false);
  if (found.empty() && GgufsIn(dir).size() == 1) found = ProjectorIn(dir, name, true);
  return found;
}

}  // namespace cli
