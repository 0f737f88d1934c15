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

}  // namespace ckpt::conv_detail
