#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

Tensor sum(const Tensor& x);  // all elements; saves nothing
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims,
           bool keepdim = false);  // nothing
Tensor mean(const Tensor& x);      // all elements; saves nothing
// By dims; PyTorch 1.13's MeanBackward1 keeps its input, and so does this.
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
// torch.amax over dims (global max pooling, CBAM's channel attention, ONNX ReduceMax). Saves
// its input and result (AmaxBackward0); the gradient is shared equally among tied maxima.
Tensor amax(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim = false);

}  // namespace ckpt
