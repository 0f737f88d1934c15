#pragma once

// Which module of the open model each measured allocation belongs to, where the snapshot lets
// that be said. Matched in order by exact bytes (a tensor of the same shape and dtype asks for
// the same bytes on both): first the model's parameters, in the order the model declares them
// (PyTorch code builds them in that order, inside the recording when the step builds its
// model), then the engine's predicted allocs, each GPU alloc taking the model node, module and
// step of its engine twin. What the engine does not model (cuBLAS/cuDNN workspaces, a dropout
// mask's other dtype, cuDNN's layouts) stays unattributed.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/snapshot/measured_timeline.hpp"
#include "engine/trace/snapshot_compare.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

struct AllocationOwner {
  bool matched = false;
  bool parameter = false;  // a parameter of the model (node: its name)
  std::int64_t step = -1;  // the engine's step that made its twin (not for a parameter)
  std::string node;        // that step's model node ("stage1.0.conv1"), or the parameter
  std::string module;      // the innermost module path ("stage1.0"), may be "" (the root)
};

struct SnapshotAttribution {
  // One per event of the measured device's trace: set for the alloc events that matched.
  std::vector<AllocationOwner> by_event;
  std::int64_t allocs = 0;      // alloc events in the measured trace
  std::int64_t matched = 0;     // of them, attributed
  std::int64_t parameters = 0;  // of those, to parameters
  // The owner of an allocation live at the peak (by its alloc event); null when none.
  const AllocationOwner* owner(const MeasuredAllocation& a) const;
};

// `window`: how many of the engine's allocations past the last match a GPU alloc may skip to
// find its twin (the engine has no workspaces; the GPU has no allocation the engine has not).
SnapshotAttribution attribute_snapshot(const MemorySnapshot& snapshot,
                                       const MeasuredTimeline& measured, const Trace& predicted,
                                       const Model& model, std::int64_t window = 48);

// The measured allocated bytes above the recording's start, placed on the engine's steps: each
// GPU event attributed to an engine step sits at that step's x (as the plot places steps), the
// events between two such anchors are spread evenly between them, those before the first (a
// model built inside the recording) gather at its x, those after the last run on towards x = 1.
// Without two anchors, the events are spread evenly over the run (allocated_curve above_start).
OverlayCurve allocated_curve_on_steps(const MeasuredTimeline& measured,
                                      const SnapshotAttribution& attribution,
                                      const Trace& predicted);

}  // namespace ckpt
