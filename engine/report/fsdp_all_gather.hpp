#pragma once

// FSDP2's all-gather buffers for one unit (a `fully_shard` parameter group), sized as PyTorch
// allocates them (torch/distributed/fsdp/_fully_shard, PyTorch 2.6 to main):
//
// - copy-in: `_fsdp_collectives.py`, `_get_param_all_gather_inputs`: with a MixedPrecisionPolicy
//   param_dtype that casts the float32 shards, `flat_foreach_copy_input = torch.empty(sum of the
//   padded shard numels, dtype=param_dtype)` holds the cast shards; `foreach_all_gather` drops
//   it when it returns (the all-gather is issued). Without a cast the shards are the input: 0.
// - output: `foreach_all_gather`, `all_gather_output = all_gather_comm.allocate((sum of the
//   padded shard numels * world_size,), dtype)`: one flat buffer for the whole unit, this rank's
//   part of it the all-gather's input (`all_gather_copy_in`). It is kept by the param group's
//   `_all_gather_result` until `wait_for_unshard` has copied it out; in forward with more than
//   one rank `wait_for_unshard` keeps it on in `comm_ctx.all_gather_state` until the next unit's
//   copy-out (`_fsdp_param_group.py`), and the root's post_forward frees the last one
//   (`_fsdp_state.py`, `_post_forward`).
// - unsharded: `foreach_all_gather_copy_out` → `FSDPParam.init_all_gather_outputs`
//   (`_fsdp_param.py`): one `torch.empty(shard numel * world_size)` per parameter, its padded
//   shard times the ranks, of which the unsharded parameter is a view (`init_unsharded_param`);
//   freed by `free_unsharded_param` when the unit reshards.

#include <cstdint>

#include "engine/report/fsdp_memory.hpp"

namespace ckpt {

struct FsdpAllGatherBytes {
  std::int64_t copy_in = 0;    // transient, while the all-gather is issued
  std::int64_t output = 0;     // the flat all-gather output
  std::int64_t unsharded = 0;  // the per-parameter outputs: the unsharded parameters
};

// `param_dtype`: MixedPrecisionPolicy.param_dtype (float32: none; the shards are float32).
FsdpAllGatherBytes fsdp_all_gather_bytes(const FsdpUnit& unit, int ranks, DType param_dtype);

}  // namespace ckpt
