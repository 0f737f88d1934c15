#include "engine/trace/rank_timeline.hpp"

#include <algorithm>

namespace ckpt {

const char* fsdp_category_name(FsdpCategory c) {
  switch (c) {
    case FsdpCategory::sharded_parameters:
      return "sharded parameters";
    case FsdpCategory::sharded_gradients:
      return "sharded gradients";
    case FsdpCategory::optimizer_state:
      return "optimizer state";
    case FsdpCategory::unsharded_parameters:
      return "unsharded parameters";
    case FsdpCategory::all_gather_buffers:
      return "all-gather buffers";
    case FsdpCategory::unsharded_gradients:
      return "unsharded gradients";
    case FsdpCategory::reduce_scatter:
      return "reduce-scatter";
    case FsdpCategory::activations:
      break;
  }
  return "activations";
}

void RankTimeline::push(const FsdpBytes& bytes) {
  const std::int64_t total = fsdp_total(bytes);
  if (total > peak_bytes || peak_step < 0) {
    peak_bytes = total;
    peak_step = steps();
  }
  for (std::size_t c = 0; c < kFsdpCategoryCount; ++c)
    max_by_category[c] = std::max(max_by_category[c], bytes[c]);
  by_step.push_back(bytes);
  totals.push_back(total);
}

}  // namespace ckpt
