#include "engine/model/load_notes.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>

namespace ckpt {

namespace {

std::string as_path(std::string s) {
  std::replace(s.begin(), s.end(), '.', '/');
  return s;
}

// "a, b, c" of at most `limit` names, then how many more.
std::string name_list(const std::vector<std::string>& names, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size() - limit) + " more)";
  return out;
}

}  // namespace

bool frozen_pattern_matches(const std::string& pattern, const std::string& name) {
  const std::string glob = as_path(pattern);
  // The name, then each module path above it.
  for (std::string prefix = name;;) {
    if (fnmatch(glob.c_str(), as_path(prefix).c_str(), FNM_PATHNAME) == 0) return true;
    const auto dot = prefix.rfind('.');
    if (dot == std::string::npos) return false;
    prefix.resize(dot);
  }
}

void freeze_parameters(Model& model, const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    bool any = false;
    for (ParameterInfo& p : model.parameters) {
      if (!frozen_pattern_matches(pattern, p.name)) continue;
      any = true;
      if (!p.requires_grad) continue;
      p.requires_grad = false;
      model.load_notes.frozen.emplace_back(p.name, "--frozen '" + pattern + "'");
    }
    if (!any) {
      std::vector<std::string> names;
      for (const ParameterInfo& p : model.parameters) names.push_back(p.name);
      throw std::invalid_argument(model.source + ": --frozen '" + pattern +
                                  "' names no parameter or module of the model (its parameters: " +
                                  name_list(names, 8) + ")");
    }
  }
}

std::vector<std::string> load_summary_lines(const Model& model, bool all) {
  std::vector<std::string> trainable;
  for (const ParameterInfo& p : model.parameters)
    if (p.requires_grad && !p.is_buffer) trainable.push_back(p.name);
  std::vector<std::string> lines;
  const std::size_t limit = all ? trainable.size() : 6;
  const char* noun = model.format == "onnx" ? " initializers" : " parameters";
  lines.push_back(std::to_string(trainable.size()) + " of " +
                  std::to_string(model.parameters.size()) + noun + " trainable" +
                  (trainable.empty() ? std::string() : ": " + name_list(trainable, limit)));
  // Not trainable, grouped by why, in the order first seen.
  std::vector<std::string> reasons;
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [name, why] : model.load_notes.frozen) {
    if (!by_reason.count(why)) reasons.push_back(why);
    by_reason[why].push_back(name);
  }
  for (const std::string& why : reasons)
    lines.push_back("not trainable (" + why +
                    "): " + name_list(by_reason[why], all ? SIZE_MAX : 6));
  // Weights the file does not hold: exact for a dry run, made up for a real one.
  std::vector<std::string> made;
  for (const ParameterInfo& p : model.parameters)
    if (p.made_at_run) made.push_back(p.name + ": " + describe(*p.made_at_run, p.initial.shape()));
  if (!made.empty())
    lines.push_back(std::to_string(made.size()) + " of " + std::to_string(model.parameters.size()) +
                    " weights absent (" + model.load_notes.weights_absent +
                    "): dry runs are exact; a real run makes them as torch.nn's default "
                    "initialisation would, not the trained values: " +
                    name_list(made, all ? SIZE_MAX : 4));
  for (const std::string& w : model.load_notes.warnings) lines.push_back("warning: " + w);
  return lines;
}

}  // namespace ckpt
