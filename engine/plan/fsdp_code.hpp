#pragma once

// FSDP2 in the plan's PyTorch code (issue 39): apply_fsdp(model) in torchtitan's shape —
// fully_shard on every block, then the root, with a MixedPrecisionPolicy — applied after the
// plan's checkpoints (torchtitan applies activation checkpointing, then FSDP). PyTorch 2.6+
// (torch.distributed.fsdp.fully_shard); the file still imports under 1.13.

#include <string>

#include "engine/model/model.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

// Whether the request is sharded (--fsdp, --param-dtype): the code then shards the model.
bool fsdp_requested(const RunSettings& settings);
// The apply_fsdp function, for `model`'s blocks.
std::string fsdp_function(const Model& model, const RunSettings& settings);
// `code` with apply_fsdp added and called under torchrun (WORLD_SIZE set) where the script
// builds its model; `model_line` is the line after which the model exists.
std::string with_fsdp(std::string code, const Model& model, const RunSettings& settings);

}  // namespace ckpt
