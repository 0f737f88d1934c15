#include "engine/run/run_request.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "engine/model/module_range.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

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

SelectivePolicy SelectivePolicy::save_matmul() {
  return SelectivePolicy{OpTable::instance().policy_kinds(), 1};
}

std::string SelectivePolicy::spelling() const {
  if (empty()) return "none";
  if (*this == save_matmul()) return "save-matmul";
  std::string s = "save:";
  // Appended piece by piece: GCC 12 misreports "/" + std::to_string(...) under -O3.
  for (std::size_t i = 0; i < save.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(save[i]);
  }
  if (every > 1) {
    s.push_back('/');
    s.append(std::to_string(every));
  }
  return s;
}

SelectivePolicy SelectivePolicy::parse(const std::string& text) {
  if (text == "none") return {};
  if (text == "save-matmul") return save_matmul();
  const std::vector<std::string> known = OpTable::instance().policy_kinds();
  auto fail = [&](const std::string& why) {
    std::string kinds;
    for (const auto& k : known) {
      if (!kinds.empty()) kinds.append(", ");
      kinds.append(k);
    }
    throw std::invalid_argument("policy '" + text + "': " + why +
                                " (none, save-matmul, or save:KIND[,KIND...][/N] with the op "
                                "kinds " +
                                kinds + ", e.g. save:mm,sdpa or save:mm/2)");
  };
  if (text.rfind("save:", 0) != 0) fail("not a policy");
  std::string body = text.substr(5);
  SelectivePolicy p;
  if (const auto slash = body.find('/'); slash != std::string::npos) {
    const std::string n = body.substr(slash + 1);
    const bool digits = !n.empty() && n.size() <= 6 && std::all_of(n.begin(), n.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
    p.every = digits ? std::stoi(n) : 0;
    if (p.every < 1) fail("'/" + n + "' is not a whole number from 1 to 999999");
    body = body.substr(0, slash);
  }
  for (std::size_t start = 0;;) {
    const auto comma = body.find(',', start);
    const std::string kind = body.substr(start, comma == std::string::npos ? comma : comma - start);
    if (kind.empty()) fail("an empty op kind");
    if (std::find(known.begin(), known.end(), kind) == known.end())
      fail("unknown op kind '" + kind + "'");
    p.save.push_back(kind);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(p.save.begin(), p.save.end());
  p.save.erase(std::unique(p.save.begin(), p.save.end()), p.save.end());
  return p;
}

std::string CheckpointPlan::key() const {
  std::string key;
  for (const auto& m : modules) key += m + ";";
  auto sorted = ranges;
  std::sort(sorted.begin(), sorted.end());
  key += "|";
  for (const auto& [a, b] : sorted) key += a + ".." + b + ";";
  if (segments > 0) key += "|segments=" + std::to_string(segments);
  if (!policy.empty()) key += "|policy=" + policy.spelling();
  for (const auto& [region, own] : policies) key += "|" + region + ":" + own.spelling();
  if (!offload.empty()) {
    key += "|offload=";
    for (const auto& m : offload) key += m + ";";
  }
  return key;
}

bool CheckpointPlan::any_policy() const {
  if (!policy.empty()) return true;
  for (const auto& [region, own] : policies)
    if (!own.empty()) return true;
  return false;
}

CheckpointPlan CheckpointPlan::without(const std::string& path) const {
  CheckpointPlan p = *this;
  p.modules.erase(path);
  p.offload.erase(path);
  p.policies.erase(path);
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
