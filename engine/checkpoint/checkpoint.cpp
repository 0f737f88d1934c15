#include "engine/checkpoint/checkpoint.hpp"

#include <memory>
#include <stdexcept>

#include "engine/checkpoint/segment.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

std::vector<std::string> ops_of_kinds(const std::vector<std::string>& kinds) {
  std::vector<std::string> out;
  for (const std::string& kind : kinds)
    for (std::string& type : OpTable::instance().types_of_policy_kind(kind))
      out.push_back(std::move(type));
  return out;
}

TensorList checkpoint(const SegmentFunction& fn, const TensorList& inputs,
                      const CheckpointOptions& options) {
  if (!fn)
    throw std::invalid_argument("checkpoint '" + detail::segment_name(options) +
                                "': the function is empty");
  return options.use_reentrant ? detail::checkpoint_reentrant(fn, inputs, options)
                               : detail::checkpoint_non_reentrant(fn, inputs, options);
}

TensorList checkpoint_sequential(const std::vector<SegmentFunction>& functions, int segments,
                                 const TensorList& input, const CheckpointOptions& options) {
  const auto n = static_cast<std::int64_t>(functions.size());
  if (segments <= 0)
    throw std::invalid_argument("checkpoint_sequential: segments must be at least 1, got " +
                                std::to_string(segments) +
                                " (PyTorch 1.13 fails here with ZeroDivisionError)");
  if (segments > n)
    throw std::invalid_argument(
        "checkpoint_sequential: " + std::to_string(segments) + " segments for " +
        std::to_string(n) +
        " functions leaves an empty segment (PyTorch 1.13 fails here with \"range() arg 3 must "
        "not be zero\")");
  // The segments' functions outlive this call (the recomputation runs in backward): they share
  // one copy of the list.
  auto fns = std::make_shared<const std::vector<SegmentFunction>>(functions);
  auto run = [fns](std::int64_t start, std::int64_t end) {
    return [fns, start, end](const TensorList& in) {
      TensorList x = in;
      for (auto j = start; j <= end; ++j) x = (*fns)[static_cast<std::size_t>(j)](x);
      return x;
    };
  };
  // 1.13's split: segments - 1 checkpointed chunks of len // segments, the rest run plainly.
  const std::int64_t size = n / segments;
  std::int64_t end = -1;
  TensorList x = input;
  int index = 0;
  for (std::int64_t start = 0; start < size * (segments - 1); start += size, ++index) {
    end = start + size - 1;
    CheckpointOptions o = options;
    const std::string base = options.name.empty() ? std::string("segment") : options.name;
    o.name = base + "[" + std::to_string(index) + "]";
    x = checkpoint(run(start, end), x, o);
  }
  return run(end + 1, n - 1)(x);
}

}  // namespace ckpt
