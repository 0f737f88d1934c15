#pragma once

// One rank's memory over a run's steps when the run is sharded with FSDP2 (`fully_shard`,
// issue 39): by the categories a sharded step adds to a run's own, at each step's high-water
// mark. engine/report/fsdp_memory.cpp derives it from the run's trace (modelled on FSDP2's
// documented behaviour, not yet measured on a GPU); the plot stacks it and the summary reads
// its peak, so that a rank's timeline is one definition, not one per view.
//
// CONTRACT, as trace.hpp: shared by engine/report, ui/ and app/cli. Additions are fine;
// changing or removing a member needs every user updated in the same change.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ckpt {

// Bottom to top as the plot stacks them: the states that live all step long first.
enum class FsdpCategory : std::uint8_t {
  sharded_parameters,    // float32 shards (padded on dim 0) and the buffers, unsharded
  sharded_gradients,     // float32 shard gradients, made by each unit's reduce-scatter
  optimizer_state,       // the optimizer's state of the shards
  unsharded_parameters,  // all-gathered units' parameters (param dtype, dim 0 padded to N)
  all_gather_buffers,    // FSDP2's flat all-gather outputs and copy-in buffers (param dtype)
  unsharded_gradients,   // a unit's gradients (param dtype) until its reduce-scatter
  reduce_scatter,        // the reduce-scatter's input and output (reduce dtype)
  activations,           // the run's own: saved activations, inputs, temporaries, workspaces, ...
};
inline constexpr std::size_t kFsdpCategoryCount = 8;
const char* fsdp_category_name(FsdpCategory c);
using FsdpBytes = std::array<std::int64_t, kFsdpCategoryCount>;

inline std::int64_t fsdp_total(const FsdpBytes& b) {
  std::int64_t t = 0;
  for (auto v : b) t += v;
  return t;
}

struct RankTimeline {
  int ranks = 1;
  // Per trace step: what one rank holds at the step's high-water mark (a reduce-scatter's
  // buffers included at the step that makes them), and its sum.
  std::vector<FsdpBytes> by_step;
  std::vector<std::int64_t> totals;
  FsdpBytes max_by_category{};  // over all steps: which categories ever appear
  std::int64_t peak_bytes = 0;
  std::int64_t peak_step = -1;

  std::int64_t steps() const { return static_cast<std::int64_t>(totals.size()); }
  // Appends step `by_step.size()`'s breakdown, keeping the totals, maxima and peak.
  void push(const FsdpBytes& bytes);
};

}  // namespace ckpt
