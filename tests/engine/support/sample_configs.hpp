#pragma once

// The configurations the engine tests run every sample in (golden traces, dry runs, samples):
// one list, so that a configuration added for one test is run by all of them.

#include <string>
#include <utility>
#include <vector>

#include "engine/run/runner.hpp"

namespace ckpt::test {

// The sample's own settings, nothing checkpointed, one thread.
inline CheckpointConfig plain(const Model& m) {
  CheckpointConfig c = scenario_config(m);
  c.modules.clear();
  c.segments = 0;
  c.threads = 1;
  return c;
}

// Every checkpointable module, nested ones too.
inline CheckpointConfig every_module(const Model& m, bool reentrant) {
  CheckpointConfig c = plain(m);
  for (const Module* mod : m.all_modules())
    if (mod->checkpointable) c.modules.insert(mod->path);
  c.use_reentrant = reentrant;
  return c;
}

// By name: plain, the scenario, both variants, inputs requiring grad, the save-matmul policy,
// early stop, no RNG stash, checkpoint_sequential. `heavy` (the 100,000-op samples): the first
// three only.
inline std::vector<std::pair<std::string, CheckpointConfig>> sample_configurations(const Model& m,
                                                                                   bool heavy) {
  std::vector<std::pair<std::string, CheckpointConfig>> out;
  out.emplace_back("plain", plain(m));
  CheckpointConfig scenario = scenario_config(m);
  scenario.threads = 1;
  out.emplace_back("scenario", scenario);
  out.emplace_back("all non-reentrant", every_module(m, false));
  if (heavy) return out;
  out.emplace_back("all reentrant", every_module(m, true));
  CheckpointConfig inputs_grad = every_module(m, true);
  inputs_grad.input_requires_grad = true;
  out.emplace_back("all reentrant, inputs require grad", inputs_grad);
  CheckpointConfig policy = every_module(m, false);
  policy.policy = SelectivePolicy::save_matmul;
  out.emplace_back("all non-reentrant save-matmul", policy);
  CheckpointConfig early = every_module(m, false);
  early.early_stop = true;
  out.emplace_back("all non-reentrant early-stop", early);
  CheckpointConfig no_rng = every_module(m, true);
  no_rng.preserve_rng_state = false;
  no_rng.input_requires_grad = true;
  out.emplace_back("all reentrant no-rng", no_rng);
  CheckpointConfig sequential = plain(m);
  sequential.segments = 2;
  out.emplace_back("segments 2", sequential);
  return out;
}

}  // namespace ckpt::test
