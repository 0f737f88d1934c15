#pragma once

#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Both save their result (SoftmaxBackward0, LogSoftmaxBackward0), as PyTorch 1.13.
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace ckpt
