#include "engine/report/fsdp_all_gather.hpp"

#include <stdexcept>
#include <string>

namespace ckpt {

FsdpAllGatherBytes fsdp_all_gather_bytes(const FsdpUnit& unit, int ranks, DType param_dtype) {
  if (ranks < 1)
    throw std::invalid_argument("fsdp: the number of ranks must be at least 1, got " +
                                std::to_string(ranks));
  std::int64_t shards = 0;
  for (const auto& p : unit.params) shards += p.shard_numel;
  const std::int64_t bytes = dtype_size(param_dtype);
  FsdpAllGatherBytes b;
  b.copy_in = param_dtype == DType::f32 ? 0 : shards * bytes;
  b.output = shards * ranks * bytes;
  b.unsharded = b.output;  // each parameter's padded shard times the ranks, in the same dtype
  return b;
}

}  // namespace ckpt
