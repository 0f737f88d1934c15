#pragma once

#include <functional>
#include <string>

#include "engine/ops/ops.hpp"

namespace ckpt::testing {

using Fn = std::function<Tensor(const TensorList&)>;

struct GradcheckResult {
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string where;  // input index and element of the worst error
  bool ok(double atol = 1e-6, double rtol = 1e-4) const {
    return max_abs_error <= atol || max_rel_error <= rtol;
  }
};

// Compares the analytic gradient (through the engine's backward) of sum(w * f(inputs)), w a
// fixed random weighting, with central finite differences in f64.
GradcheckResult gradcheck(const Fn& f, const TensorList& inputs, double eps = 1e-6);

// A float64 leaf that requires grad, filled from a fixed seed (values in [lo, hi)).
Tensor random_leaf(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

}  // namespace ckpt::testing
