#pragma once

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// What each keeps for backward follows PyTorch 1.13: its result (relu, exp, sqrt, tanh,
// sigmoid) or its input (log, gelu, sin, cos).
Tensor exp(const Tensor& x);      // saves result
Tensor log(const Tensor& x);      // saves x
Tensor sqrt(const Tensor& x);     // saves result
Tensor relu(const Tensor& x);     // saves result
Tensor gelu(const Tensor& x);     // saves x (exact, erf-based: approximate='none')
Tensor tanh(const Tensor& x);     // saves result
Tensor sigmoid(const Tensor& x);  // saves result
Tensor sin(const Tensor& x);      // saves x
Tensor cos(const Tensor& x);      // saves x

}  // namespace ckpt
