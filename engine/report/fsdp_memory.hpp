#pragma once

// What one rank of an FSDP2 (`fully_shard`) training step holds, issue 39: modelled on FSDP2's
// documented behaviour (torch/distributed/fsdp/_fully_shard), not yet measured on a GPU
// (../shared/reference/gpu-oracle/fsdp holds the script that will measure it).
//
// - Units: fully_shard on every block, then the root, as torchtitan applies it. The blocks are
//   the children of the module with the most children holding parameters (Llama's `layers`,
//   GPT's `h`); everything else, and every parameter two units use (a tied embedding), is the
//   root's.
// - Each parameter is sharded on dim 0: chunks of ceil(dim0 / N) rows, padded so that every
//   rank's chunk is that size. A rank keeps its float32 shard, the shard's gradient (made by
//   the unit's reduce-scatter) and the optimizer state of its shard.
// - A unit's parameters are all-gathered in the param dtype before its forward, and again
//   before its backward, through FSDP2's copy-in and flat output buffers into per-parameter
//   outputs padded on dim 0 (fsdp_all_gather.hpp, with the PyTorch functions it follows). In
//   forward the next unit is all-gathered at its own pre-forward (implicit prefetch) and each
//   unit's flat output is kept until the next copy-out; in backward the previous unit's
//   all-gather is prefetched while a unit computes. Parameters are freed after the unit's
//   forward (reshard_after_forward), after its backward in any case; the root's stay unsharded
//   from its forward to the end of the backward.
// - A unit's unsharded gradients (param dtype) live through its backward; at its end
//   (post_backward, foreach_reduce) the reduce-scatter copies them into its input (N × the
//   padded shard, in reduce_dtype) and frees them, then writes its output (one shard, in
//   float32 the shard's gradient itself, in bfloat16 cast to it). The input is kept until the
//   next unit's post_backward (comm_ctx.reduce_scatter_state), the last until the backward ends.
// - Activations, temporaries and workspaces are the run's own (made in the param dtype).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/run/run_request.hpp"
#include "engine/trace/rank_timeline.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

inline constexpr char kFsdpNotMeasured[] =
    "modelled on FSDP2's documented behaviour, not yet measured on a GPU";

// One parameter's layout over N ranks.
struct FsdpParamLayout {
  std::string name;
  Shape shape;
  std::int64_t numel = 0;
  std::int64_t rows_per_rank = 0;  // ceil(dim0 / N)
  std::int64_t shard_numel = 0;    // rows_per_rank × the other dims (padding included)
};
FsdpParamLayout fsdp_param_layout(const std::string& name, const Shape& shape, int ranks);

struct FsdpUnit {
  std::string path;  // "" for the root
  std::vector<FsdpParamLayout> params;
  std::int64_t numel = 0;                   // unsharded, unpadded
  std::int64_t shard_numel = 0;             // a rank's, padded
  std::int64_t first_op = -1, end_op = -1;  // ops of the block (the root: none of its own)
};

// The units fully_shard makes of `model` over `ranks`: the blocks in execution order, then the
// root (last). Throws std::invalid_argument for ranks < 1.
std::vector<FsdpUnit> fsdp_units(const Model& model, int ranks);

struct FsdpRankMemory {
  int ranks = 1;
  FsdpSettings settings;
  DType param_dtype = DType::f32;
  std::vector<FsdpUnit> units;  // blocks, then the root
  // Per trace step: live bytes after the step, and the units (indices into `units`, the root
  // excluded) whose parameters are unsharded during it (a prefetched unit's flat all-gather
  // output is a buffer, not yet its parameters).
  std::vector<std::int64_t> total_by_step;
  std::vector<std::vector<int>> gathered_by_step;
  // The rank's high-water mark of each step by category (what the plot stacks); the peak is
  // its highest, at_peak its breakdown.
  RankTimeline timeline;
  std::int64_t peak_bytes = 0;
  std::int64_t peak_step = -1;
  FsdpBytes at_peak{};
  FsdpBytes states{};  // sharded parameters, gradients and optimizer state once made
};

// What the summary shows of it (`ckptlab-cli run`, the app's summary, --json's "per_rank").
struct FsdpSummary {
  int ranks = 1;
  FsdpSettings settings;
  DType param_dtype = DType::f32;
  std::size_t blocks = 0;  // units besides the root
  std::int64_t peak_bytes = 0;
  std::int64_t peak_step = -1;
  std::string peak_phase, peak_node;
  FsdpBytes at_peak{};
  std::int64_t parameters = 0;  // unsharded, all units
};
FsdpSummary fsdp_summary(const FsdpRankMemory& m, const Trace& trace);
std::string fsdp_summary_text(const FsdpSummary& s);

// The per-rank memory of the run `trace` of `model`, made with `settings` (param_dtype, fsdp,
// optimizer). fsdp.ranks 0 counts as 1 (FSDP2 on one GPU).
FsdpRankMemory fsdp_rank_memory(const Model& model, const Trace& trace,
                                const RunSettings& settings);

}  // namespace ckpt
