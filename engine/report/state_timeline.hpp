#pragma once

// Every state change of every op output of a run, in step order, tagged with its op. The graph
// view keeps per-node state counts and moves them along this list when the cursor moves, so a
// step costs the changes it crosses instead of a query per tensor (HeavyModel: 100,000 tensors
// under 1,000 collapsed nodes). Built once per run (engine/report/run_report.hpp).

#include <cstdint>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

struct StateChange {
  std::int64_t step = 0;
  std::int32_t op = 0;
  ActivationState from = ActivationState::pending;
  ActivationState to = ActivationState::pending;
};

struct StateTimeline {
  std::vector<StateChange> changes;          // sorted by step, stable (trace order within a step)
  std::vector<std::int32_t> tensors_per_op;  // op outputs the trace knows, all pending at first
  // The model op each step runs (forward, recompute) or belongs to (its backward node), -1 for
  // none: joined once here by node name, so that views index instead of looking names up.
  std::vector<std::int32_t> step_op;

  std::int64_t op_at(std::int64_t step) const {
    return step >= 0 && step < static_cast<std::int64_t>(step_op.size())
               ? step_op[static_cast<std::size_t>(step)]
               : -1;
  }
};

StateTimeline build_state_timeline(const Model& model, const Trace& trace);

}  // namespace ckpt
