#pragma once

// Dynamic programs over the peak model's positions (Rotor's idea, on this engine's plans): a
// plan of disjoint candidates is a path from the first op to the loss that, at each position,
// either runs the next ops plainly or checkpoints a candidate starting there. Every figure the
// peak model gives is "a plain figure less the bytes saved to the left", so the state is the
// bytes saved so far (in buckets, rounded down: the program never counts more than a candidate
// saves) and each step's constraint is known when it is taken. Milliseconds on a thousand
// positions; proposals only — the planner verifies each one by a dry run.

#include <cstdint>
#include <vector>

#include "engine/plan/peak_model.hpp"

namespace ckpt {

struct ChainProposal {
  bool found = false;
  std::vector<int> chosen;        // candidate indices, disjoint
  std::int64_t predicted = 0;     // the peak model's peak of the plan
  std::int64_t recompute_ns = 0;  // its cost: recompute and offload copies (Candidate::cost_ns)
};

// The least recompute whose predicted peak is within `budget`; without `twins`, from the
// regions recomputed whole only (no Candidate::is_twin: no policy, no offload).
ChainProposal cheapest_within_model(const PeakModel& model, std::int64_t budget, bool twins = true);

// The lowest predicted peak (its cheapest plan among those the buckets tell apart); without
// `twins`, from the regions recomputed whole only.
ChainProposal lowest_in_model(const PeakModel& model, bool twins = true);

}  // namespace ckpt
