#pragma once

// conv2d's kernels (the CPU backend's): im2col + GEMM, either one GEMM per image straight
// into the output with a per-thread column buffer that stays in cache (large output planes,
// images split across threads), or one GEMM over every image's columns (small planes, where a
// per-image GEMM would be too thin). Workspaces are Tensors: the ledger counts them.

#include <cstdint>
#include <vector>

#include "engine/kernels/conv_geometry.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt::conv_detail {

// x, w, bias contiguous (bias may be undefined); returns [N, O, Ho, Wo].
Tensor forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g);
// Gradients {dx, dw, db} for the requested ones (need: input, weight, bias).
TensorList backward(const Tensor& grad_out, const Tensor& x, const Tensor& w, const Geometry& g,
                    const std::vector<bool>& need, bool has_bias);

// conv_transpose2d through the same kernels: `g` is the geometry of the adjoint conv2d, whose
// input is the transposed convolution's output [N, Cout, Ho, Wo] (g.c = Cout) and whose output
// is its input [N, Cin, H, W] (g.o = Cin); the weight [Cin, Cout / groups, kh, kw] is that
// conv2d's as it is. The forward is the adjoint's input gradient, the input gradient its
// forward, the weight gradient its weight gradient with the roles of x and dy exchanged.
Tensor transposed_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g);
TensorList transposed_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                               const Geometry& g, const std::vector<bool>& need, bool has_bias);

// The same four as PyTorch 2.x's cuDNN calls allocate them (conv_cudnn.cpp): the forms the four
// above take on a device whose kernels are PyTorch's CUDA ones (memory_semantics.hpp).
Tensor cudnn_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g);
TensorList cudnn_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                          const Geometry& g, const std::vector<bool>& need, bool has_bias);
Tensor cudnn_transposed_forward(const Tensor& x, const Tensor& w, const Tensor& bias,
                                const Geometry& g);
TensorList cudnn_transposed_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                                     const Geometry& g, const std::vector<bool>& need,
                                     bool has_bias);
// Whether a convolution on `t`'s device runs as cuDNN does.
bool runs_as_cudnn(const Tensor& t);

}  // namespace ckpt::conv_detail
