#pragma once

#include <optional>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// What each keeps for backward follows PyTorch 1.13: its result (relu, exp, sqrt, tanh,
// sigmoid) or its input (log, gelu, sin, cos).
Tensor exp(const Tensor& x);      // saves result
Tensor log(const Tensor& x);      // saves x
Tensor sqrt(const Tensor& x);     // saves result
Tensor rsqrt(const Tensor& x);    // saves result (RsqrtBackward0): RMSNorm's 1/√(mean(x²) + eps)
Tensor relu(const Tensor& x);     // saves result
Tensor gelu(const Tensor& x);     // saves x (exact, erf-based: approximate='none')
Tensor tanh(const Tensor& x);     // saves result
Tensor sigmoid(const Tensor& x);  // saves result
Tensor sin(const Tensor& x);      // saves x
Tensor cos(const Tensor& x);      // saves x
// torch.clamp with either bound optional (at least one given); NaN propagates. Saves x
// (ClampBackward1); the gradient passes where min <= x <= max.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
// F.hardtanh; relu6 = hardtanh(x, 0, 6). Saves x (HardtanhBackward0); the gradient passes
// where min < x < max (strictly, unlike clamp).
Tensor hardtanh(const Tensor& x, double min = -1, double max = 1);
Tensor erf(const Tensor& x);
Tensor hardswish(const Tensor& x);    // saves x; x·relu6(x + 3)/6 (MobileNetV3)
Tensor hardsigmoid(const Tensor& x);  // saves x; relu6(x + 3)/6
// Common in segmentation and sequence models (GAN discriminators, U-Nets, Mish's softplus).
Tensor leaky_relu(const Tensor& x, double slope = 0.01);  // saves x
Tensor elu(const Tensor& x, double alpha = 1.0);          // saves x (EluBackward0, not inplace)
Tensor softplus(const Tensor& x);                         // saves x; beta 1, threshold 20
Tensor abs(const Tensor& x);                              // saves x; gradient sign(x), 0 at 0
Tensor sign(const Tensor& x);  // saves nothing: its gradient is 0 everywhere (SignBackward0)

}  // namespace ckpt
