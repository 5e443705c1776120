// -m, --models-dir and --models-preset into the list of models the server can serve.
#include "model_list.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "../args.h"
#include "../model_files.h"

namespace cli::serve {

namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

ModelSpec Spec(const std::string& alias, const std::string& path, const ServeOptions& base) {
  ModelSpec s{alias, base};
  s.o.model = path;
  s.o.alias = alias;
  s.o.models.clear();
  s.o.mmproj.clear();  // --mmproj is the first -m model's; the others find theirs (DirectoryModels)
  return s;
}

}  // namespace

std::vector<ModelSpec> DirectoryModels(const std::string& dir, const ServeOptions& base) {
  if (!IsDir(dir)) throw UsageError("--models-dir: '" + dir + "' is not a readable directory");
  std::vector<ModelSpec> out;
  for (const auto& [name, path] : GgufsIn(dir)) {
    out.push_back(Spec(name, path, base));
    out.back().o.mmproj = ProjectorIn(dir, name, false);
  }
  for (const std::string& n : DirEntries(dir)) {
    const std::string sub = dir + "/" + n;
    if (!IsDir(sub)) continue;
    const auto inside = GgufsIn(sub);
    if (inside.size() != 1) continue;
    out.push_back(Spec(n, inside[0].second, base));
    out.back().o.mmproj = ProjectorIn(sub, n, true);
  }
  std::sort(out.begin(), out.end(), [](const ModelSpec& a, const ModelSpec& b) { return a.alias < b.alias; });
  return out;
}

std::vector<ModelSpec> ParsePreset(const std::string& text, const std::string& file, const std::string& dir,
                                   const ServeOptions& base) {
  std::vector<ModelSpec> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  auto fail = [&](const std::string& why) {
    throw UsageError("--models-preset " + file + ":" + std::to_string(n) + ": " + why);
  };
  auto resolve = [&](const std::string& p) { return p.empty() || p[0] == '/' ? p : dir + "/" + p; };
  auto number = [&](const std::string& key, const std::string& v, int lo, int hi) {
    try {
      return int(ParseInt(key, v, lo, hi));
    } catch (const UsageError& e) {
      fail(e.what());
    }
    return 0;
  };
  while (std::getline(in, line)) {
    ++n;
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') fail("a section header must end with ']'");
      const std::string name = Trim(line.substr(1, line.size() - 2));
      if (name.empty()) fail("empty section name");
      out.push_back(Spec(name, "", base));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) fail("expected 'key = value'");
    if (out.empty()) fail("'" + Trim(line.substr(0, eq)) + "' before the first [NAME] section");
    const std::string key = Trim(line.substr(0, eq));
    std::string v = line.substr(eq + 1);
    // A comment after the value: '#' or ';' after a blank.
    for (size_t k = 1; k < v.size(); ++k) {
      if ((v[k] == '#' || v[k] == ';') && (v[k - 1] == ' ' || v[k - 1] == '\t')) {
        v.resize(k);
        break;
      }
    }
    v = Trim(v);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    ServeOptions& o = out.back().o;
    if (key == "path" || key == "model" || key == "m") {
      o.model = resolve(v);
    } else if (key == "ctx-size" || key == "c" || key == "ctx") {
      o.ctx = number(key, v, 0, 1 << 24);
    } else if (key == "parallel" || key == "np") {
      o.parallel = number(key, v, 1, 256);
    } else if (key == "threads" || key == "t") {
      o.threads = number(key, v, 0, 1024);
    } else if (key == "lora") {  // FILE[:SCALE], several separated by commas
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        const std::string one = v.substr(at, comma - at);
        if (!one.empty()) o.lora.push_back(one);
        at = comma + 1;
      }
    } else if (key == "pooling") {
      static const std::pair<const char*, int> kWords[] = {
          {"mean", ZF_POOLING_MEAN}, {"cls", ZF_POOLING_CLS}, {"last", ZF_POOLING_LAST}, {"rank", ZF_POOLING_RANK}};
      o.pooling = ZF_POOLING_DEFAULT;
      for (const auto& [word, value] : kWords) {
        if (v == word) o.pooling = value;
      }
      if (o.pooling == ZF_POOLING_DEFAULT) fail("pooling: '" + v + "' is not one of mean, cls, last, rank");
    } else if (key == "n-predict" || key == "n") {
      o.n_predict = number(key, v, -1, 1 << 30);
    } else if (key == "mmproj") {
      o.mmproj = resolve(v);
    } else if (key == "model-draft" || key == "md") {
      o.model_draft = resolve(v);
      if (o.draft_max == 0) o.draft_max = 8;
    } else if (key == "chat-template-file") {
      std::ifstream f(resolve(v), std::ios::binary);
      if (!f) fail("chat-template-file: cannot read '" + resolve(v) + "'");
      std::stringstream t;
      t << f.rdbuf();
      o.chat_template = t.str();
    } else {
      fail("unknown key '" + key +
           "' (known: path, ctx-size, parallel, threads, n-predict, pooling, chat-template-file, model-draft, lora, "
           "mmproj)");
    }
  }
  for (const ModelSpec& s : out) {
    if (s.o.model.empty()) throw UsageError("--models-preset " + file + ": [" + s.alias + "] has no path");
  }
  return out;
}

std::vector<ModelSpec> ModelList(const ServeOptions& o) {
  std::vector<ModelSpec> out;
  for (size_t i = 0; i < o.models.size(); ++i) {
    const ModelArg& m = o.models[i];
    std::string alias = m.alias;
    if (alias.empty()) {
      alias = m.path.substr(m.path.find_last_of('/') + 1);
      if (EndsWith(alias, ".gguf")) alias.resize(alias.size() - 5);
    }
    out.push_back(Spec(alias, m.path, o));
    if (i == 0) out.back().o.mmproj = o.mmproj;
  }
  if (!o.mmproj.empty() && o.models.empty()) {
    throw UsageError("--mmproj belongs to the -m model; with --models-dir put it beside its model (doc/serve.md)");
  }
  if (!o.models_preset.empty()) {
    std::ifstream f(o.models_preset, std::ios::binary);
    if (!f) throw UsageError("--models-preset: cannot read '" + o.models_preset + "'");
    std::stringstream text;
    text << f.rdbuf();
    const size_t slash = o.models_preset.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : o.models_preset.substr(0, slash);
    for (ModelSpec& s : ParsePreset(text.str(), o.models_preset, dir, o)) out.push_back(std::move(s));
  }
  if (!o.models_dir.empty()) {
    for (ModelSpec& s : DirectoryModels(o.models_dir, o)) out.push_back(std::move(s));
  }
  std::set<std::string> seen;
  for (const ModelSpec& s : out) {
    if (!seen.insert(s.alias).second) {
      throw UsageError("the model name '" + s.alias + "' is given twice (name one of them with -m FILE=NAME)");
    }
  }
  if (out.empty()) throw UsageError("no models: --models-dir / --models-preset name no GGUF file");
  return out;
}

}  // namespace cli::serve
