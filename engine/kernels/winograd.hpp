#pragma once

// Winograd F(2x2, 3x3) for stride-1 3x3 convolutions (the CPU backend's). Each 2x2 output
// tile comes from a 4x4 input tile as Y = A^T [(G w G^T) . (B^T d B)] A: 16 products per
// tile and channel pair instead of 36, done as 16 GEMMs over the channels. The same algebra
// gives the two gradients: the input gradient is a stride-1 3x3 convolution of dY with the
// flipped, transposed weight, and the weight gradient is G^T [sum over tiles of
// (A dY A^T) . (B^T d B)] G. Tiles are processed a few images at a time, each block on one
// thread, so that a block's transformed data stays in cache. All coefficients are 0, +-1 or
// +-1/2: the rounding error stays that of a direct convolution's order.
//
// Workspaces are Tensors (the ledger counts them as temporary memory of the step).

#include "engine/kernels/conv_impl.hpp"

namespace ckpt::conv_detail {

// Whether F(2x2, 3x3) computes this convolution (3x3, stride 1, dilation 1, one group,
// padding at most 2, for the input gradient's padding of 2 - p).
bool winograd_applies(const Geometry& g);
// Whether it is expected to be faster than im2col + GEMM for this shape and path.
enum class ConvPath { forward, input_grad, weight_grad };
bool winograd_pays(const Geometry& g, ConvPath path);

// out [N, O, Ho, Wo] (bias may be undefined); x, w contiguous.
void winograd_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
                      Tensor& out);
// dx [N, C, H, W] from dY [N, O, Ho, Wo].
void winograd_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx);
// dw [O, C, 3, 3] from dY and x.
void winograd_weight_grad(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw);

}  // namespace ckpt::conv_detail
