#pragma once

// The activations PyTorch's exporter writes as several ONNX nodes, which the importer fuses
// back (issue 27): each saves its input, as PyTorch 1.13's SiluBackward0, MishBackward0 and
// GeluBackward0 (approximate='tanh') do; and GLU, which the exporter writes as Split,
// Sigmoid and Mul.

#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

Tensor silu(const Tensor& x);       // x · sigmoid(x)
Tensor mish(const Tensor& x);       // x · tanh(softplus(x))
Tensor gelu_tanh(const Tensor& x);  // 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
// F.glu: a · sigmoid(b), a and b the halves of x along `dim`; saves x, as GluBackward0.
Tensor glu(const Tensor& x, std::int64_t dim);

}  // namespace ckpt
