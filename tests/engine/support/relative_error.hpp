#pragma once

// How close two tensors are, for the tests that hold the engine to PyTorch's values: one rule,
// so that every such test means the same by "within 1e-5".

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/tensor/tensor.hpp"

namespace ckpt::test {

// The largest difference over the reference's largest value, or over `floor` where that is
// larger (a BatchNorm weight right before another BatchNorm has a gradient of ~1e-7 made of
// cancellations, where f32 rounding alone is a few percent). Infinite when the sizes differ.
inline double relative_error(const Tensor& a, const Tensor& reference, double floor = 1e-12) {
  const auto va = a.to_vector(), vb = reference.to_vector();
  if (va.size() != vb.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = floor;
  for (std::size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(va[i] - vb[i])));
    scale = std::max(scale, static_cast<double>(std::abs(vb[i])));
  }
  return diff / scale;
}

}  // namespace ckpt::test
