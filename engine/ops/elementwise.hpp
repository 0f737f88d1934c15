#pragma once

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Binary ops broadcast like NumPy. Each states what it saves for backward (as PyTorch 1.13).
Tensor add(const Tensor& a, const Tensor& b);  // saves nothing
Tensor sub(const Tensor& a, const Tensor& b);  // saves nothing
Tensor mul(const Tensor& a, const Tensor& b);  // saves a (if b needs grad) and b (if a does)
Tensor div(const Tensor& a, const Tensor& b);  // saves b, and a if b needs grad
Tensor add(const Tensor& a, double b);         // saves nothing
Tensor sub(const Tensor& a, double b);         // saves nothing
Tensor mul(const Tensor& a, double b);         // saves the scalar as a 0-d tensor (8 bytes)
Tensor div(const Tensor& a, double b);         // saves the scalar as a 0-d tensor (8 bytes)
Tensor neg(const Tensor& a);                   // saves nothing
Tensor pow(const Tensor& a, double exponent);  // saves a
// torch.maximum / torch.minimum: save a and b (MaximumBackward0); NaN propagates, and a tie
// sends half the gradient to each side, as PyTorch 1.13.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator-(const Tensor& a);

// True when grad mode is on and t requires grad: whether an op must keep what t's gradient needs.
bool needs_grad(const Tensor& t);

}  // namespace ckpt
