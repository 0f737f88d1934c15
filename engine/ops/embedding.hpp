#pragma once

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// F.embedding(indices, weight): rows of weight [V, D] gathered by int64 indices of any shape
// (output indices.shape + [D]). Saves indices and weight (EmbeddingBackward0); the gradient
// is dense.
Tensor embedding(const Tensor& weight, const Tensor& indices_i64);

}  // namespace ckpt
