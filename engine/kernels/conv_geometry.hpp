#pragma once

// The shape of one 2-D convolution, and which kernel computes it: shared by the conv2d op
// (engine/ops), the kernels that compute it and the dry run that sizes their workspaces.

#include <cstdint>

namespace ckpt {

// The kernel conv2d uses. automatic picks per shape and path (forward, input gradient,
// weight gradient): Winograd F(2x2, 3x3) for stride-1 3x3 convolutions where it is faster,
// im2col + GEMM elsewhere. The others force one where it applies (tests, benchmarks).
enum class ConvAlgorithm { automatic, im2col, winograd };

}  // namespace ckpt

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

}  // namespace ckpt::conv_detail
