#pragma once

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// In-place forms, for the memory they save (nn.ReLU(inplace=True), `out += identity`). They
// follow PyTorch: the version counter moves on (so a node that saved x fails at backward with
// "modified by an inplace operation"), x's history is rebased onto the new node, and a leaf
// that requires grad is refused under grad mode. In-place on a view whose base requires grad
// (PyTorch's CopySlices) is not supported and is refused with a clear error.
Tensor& relu_(Tensor& x);                      // saves its result, i.e. x (ReluBackward0)
Tensor& add_(Tensor& x, const Tensor& other);  // other broadcasts to x; saves nothing

}  // namespace ckpt
