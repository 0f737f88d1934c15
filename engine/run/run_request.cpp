#include "engine/run/run_request.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "engine/model/module_range.hpp"

namespace ckpt {

namespace {

const char* policy_key(SelectivePolicy p) {
  switch (p) {
    case SelectivePolicy::none:
      return "";
    case SelectivePolicy::save_matmul:
      return "save-matmul";
  }
  return "";
}

constexpr const char* kOptimizerNames[] = {"none", "sgd", "momentum", "adam", "adamw"};
constexpr const char* kAmpNames[] = {"off", "bf16", "fp16"};

}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  return kOptimizerNames[static_cast<std::size_t>(kind)];
}

OptimizerKind optimizer_from_name(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kOptimizerNames); ++i)
    if (name == kOptimizerNames[i]) return static_cast<OptimizerKind>(i);
  throw std::invalid_argument("unknown optimizer '" + name +
                              "' (none, sgd, momentum, adam or adamw)");
}

const char* amp_name(AmpMode mode) {
  return kAmpNames[static_cast<std::size_t>(mode)];
}

AmpMode amp_from_name(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kAmpNames); ++i)
    if (name == kAmpNames[i]) return static_cast<AmpMode>(i);
  throw std::invalid_argument("unknown precision '" + name + "' (off, bf16 or fp16)");
}

std::string CheckpointPlan::key() const {
  std::string key;
  for (const auto& m : modules) key += m + ";";
  auto sorted = ranges;
  std::sort(sorted.begin(), sorted.end());
  key += "|";
  for (const auto& [a, b] : sorted) key += a + ".." + b + ";";
  if (segments > 0) key += "|segments=" + std::to_string(segments);
  if (policy != SelectivePolicy::none) key += std::string("|policy=") + policy_key(policy);
  if (!offload.empty()) {
    key += "|offload=";
    for (const auto& m : offload) key += m + ";";
  }
  return key;
}

CheckpointPlan CheckpointPlan::without(const std::string& path) const {
  CheckpointPlan p = *this;
  p.modules.erase(path);
  p.offload.erase(path);
  std::erase_if(p.ranges, [&](const auto& r) { return range_label(r.first, r.second) == path; });
  return p;
}

bool ExplicitInputs::operator==(const ExplicitInputs& other) const {
  return std::equal(begin(), end(), other.begin(), other.end(),
                    [](const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); });
}

bool same_run(const RunRequest& a, const RunRequest& b) {
  return a.plan == b.plan && a.settings == b.settings && a.hooks == b.hooks;
}

RunRequest scenario_request(const Model& model) {
  RunRequest r;
  r.plan.modules.insert(model.scenario.default_checkpoints.begin(),
                        model.scenario.default_checkpoints.end());
  r.plan.segments = model.scenario.segments;
  r.settings.use_reentrant = model.scenario.use_reentrant;
  r.settings.preserve_rng_state = model.scenario.preserve_rng_state;
  r.settings.seed = model.scenario.seed;
  r.settings.batch = model.scenario.batch;
  return r;
}

}  // namespace ckpt
