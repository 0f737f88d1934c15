#pragma once

#include "engine/tensor/generator.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// F.dropout as PyTorch 1.13 computes it on the CPU: noise = bernoulli(1 - p) / (1 - p) drawn
// element by element from the generator (Generator::current() unless one is given — the same
// stream as torch's for the same seed), output = x * noise, and MulBackward0 saves the noise.
// p = 0 or eval mode returns x itself (no node); p = 1 multiplies by a 0-d zero. On a device
// with CUDA's memory semantics (a CUDA run, or a dry run standing in for one) it is PyTorch
// 2.x's fused native_dropout instead: a bool mask, saved by NativeDropoutBackward0.
Tensor dropout(const Tensor& x, double p, bool training, Generator* generator = nullptr);

}  // namespace ckpt
