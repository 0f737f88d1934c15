#pragma once

// The configurations the engine tests run every sample in (golden traces, dry runs, samples):
// one list, so that a configuration added for one test is run by all of them.

#include <string>
#include <utility>
#include <vector>

#include "engine/run/runner.hpp"

namespace ckpt::test {

// The sample's own settings, nothing checkpointed, one thread.
inline RunRequest plain(const Model& m) {
  RunRequest c = scenario_request(m);
  c.plan.modules.clear();
  c.plan.segments = 0;
  c.settings.threads = 1;
  return c;
}

// Every checkpointable module, nested ones too.
inline RunRequest every_module(const Model& m, bool reentrant) {
  RunRequest c = plain(m);
  for (const Module* mod : m.all_modules())
    if (mod->checkpointable) c.plan.modules.insert(mod->path);
  c.settings.use_reentrant = reentrant;
  return c;
}

// By name: plain, the scenario, both variants, inputs requiring grad, the save-matmul policy,
// early stop, no RNG stash, checkpoint_sequential. `heavy` (the 100,000-op samples): the first
// three only.
inline std::vector<std::pair<std::string, RunRequest>> sample_configurations(const Model& m,
                                                                             bool heavy) {
  std::vector<std::pair<std::string, RunRequest>> out;
  out.emplace_back("plain", plain(m));
  RunRequest scenario = scenario_request(m);
  scenario.settings.threads = 1;
  out.emplace_back("scenario", scenario);
  out.emplace_back("all non-reentrant", every_module(m, false));
  if (heavy) return out;
  out.emplace_back("all reentrant", every_module(m, true));
  RunRequest inputs_grad = every_module(m, true);
  inputs_grad.settings.input_requires_grad = true;
  out.emplace_back("all reentrant, inputs require grad", inputs_grad);
  RunRequest policy = every_module(m, false);
  policy.plan.policy = SelectivePolicy::save_matmul();
  out.emplace_back("all non-reentrant save-matmul", policy);
  RunRequest early = every_module(m, false);
  early.settings.early_stop = true;
  out.emplace_back("all non-reentrant early-stop", early);
  RunRequest no_rng = every_module(m, true);
  no_rng.settings.preserve_rng_state = false;
  no_rng.settings.input_requires_grad = true;
  out.emplace_back("all reentrant no-rng", no_rng);
  RunRequest sequential = plain(m);
  sequential.plan.segments = 2;
  out.emplace_back("segments 2", sequential);
  return out;
}

}  // namespace ckpt::test
