#pragma once

// conv2d's kernels (internal to engine/ops): im2col + GEMM, either one GEMM per image straight
// into the output with a per-thread column buffer that stays in cache (large output planes,
// images split across threads), or one GEMM over every image's columns (small planes, where a
// per-image GEMM would be too thin). Workspaces are Tensors: the ledger counts them.

#include <cstdint>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/ops/conv.hpp"

namespace ckpt::conv_detail {

struct Geometry {
  std::int64_t n, c, h, w;  // input
  std::int64_t o, kh, kw;   // weight
  std::int64_t sh, sw, ph, pw, dh, dw, groups;
  std::int64_t ho, wo;      // output
  ConvAlgorithm algorithm;  // as chosen when the forward ran
  std::int64_t cg() const { return c / groups; }
  std::int64_t og() const { return o / groups; }
  std::int64_t kk() const { return kh * kw; }
  std::int64_t k_rows() const { return c * kh * kw; }  // rows of the column matrix
  std::int64_t k_group() const { return cg() * kh * kw; }
  std::int64_t hw_out() const { return ho * wo; }
  std::int64_t cols() const { return n * ho * wo; }
  // A 1x1, stride-1, unpadded convolution reads each image as its own column matrix.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

// x, w, bias contiguous (bias may be undefined); returns [N, O, Ho, Wo].
Tensor forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g);
// Gradients {dx, dw, db} for the requested ones (need: input, weight, bias).
TensorList backward(const Tensor& grad_out, const Tensor& x, const Tensor& w, const Geometry& g,
                    const std::vector<bool>& need, bool has_bias);

}  // namespace ckpt::conv_detail
