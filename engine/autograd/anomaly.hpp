#pragma once

// "No silent wrong answer": PyTorch's anomaly mode (torch.autograd.set_detect_anomaly), which
// fails backward with "Function 'LogBackward0' returned nan values in its 0th output.". Here
// it covers forward and recomputed ops as well (PyTorch's checks only backward), and Inf as
// well as NaN, so the op that first made a non-finite value is the one named.

#include <string>
#include <string_view>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// The first non-finite value of `t`: "nan", "inf" (either sign), or empty when every value is
// finite. Integer and meta tensors (a dry run has no values) count as finite.
const char* non_finite_kind(const Tensor& t);

// When the current ExecutionContext detects anomalies, throws std::runtime_error naming
// `function`, the output's index, the phase and `where` (the model node) if an output holds
// NaN or Inf.
void check_anomaly(const TensorList& outputs, std::string_view function, std::string_view where);

}  // namespace ckpt
