#pragma once

// The shape of one convolution over 1, 2 or 3 spatial dimensions, and which kernel computes it:
// shared by the conv ops (engine/ops), the kernels that compute it and the dry run that sizes
// their workspaces. A convolution of fewer spatial dimensions is the 3-D one with the missing
// leading axes of size 1 (a 1-D [N, C, L] is [N, C, 1, 1, L]; a 2-D [N, C, H, W] is
// [N, C, 1, H, W]): the same memory, so one implementation serves every rank, as ATen's
// conv1d runs as a conv2d over a unit height.

#include <cstdint>
#include <vector>

namespace ckpt {

// The kernel a convolution uses. automatic picks per shape and path (forward, input gradient,
// weight gradient): Winograd F(2x2, 3x3) for 2-D stride-1 3x3 convolutions where it is faster,
// im2col + GEMM elsewhere. The others force one where it applies (tests, benchmarks).
enum class ConvAlgorithm { automatic, im2col, winograd };

}  // namespace ckpt

namespace ckpt::conv_detail {

struct Geometry {
  int spatial = 2;             // 1, 2 or 3: the rank of the tensors is spatial + 2
  std::int64_t n, c, t, h, w;  // input (t: depth, or time in video; 1 below 3-D)
  std::int64_t o, kt, kh, kw;  // weight
  std::int64_t st, sh, sw, pt, ph, pw, dt, dh, dw, groups;
  std::int64_t to, ho, wo;  // output
  ConvAlgorithm algorithm;  // as chosen when the forward ran
  std::int64_t cg() const { return c / groups; }
  std::int64_t og() const { return o / groups; }
  std::int64_t kk() const { return kt * kh * kw; }
  std::int64_t k_rows() const { return c * kk(); }  // rows of the column matrix
  std::int64_t k_group() const { return cg() * kk(); }
  std::int64_t hw_in() const { return t * h * w; }      // input pixels (voxels) per channel
  std::int64_t hw_out() const { return to * ho * wo; }  // output pixels (voxels) per channel
  std::int64_t cols() const { return n * hw_out(); }
  // A 1x1, stride-1, unpadded convolution reads each image as its own column matrix.
  bool pointwise() const {
    return kk() == 1 && st == 1 && sh == 1 && sw == 1 && pt == 0 && ph == 0 && pw == 0;
  }
  // A plane convolution (no depth), what Winograd's 2-D tiles compute.
  bool planar() const { return t == 1 && kt == 1 && pt == 0; }
  // [n, channels, spatial...] of the input's (`in`) or the output's extent.
  std::vector<std::int64_t> image_shape(std::int64_t images, std::int64_t channels, bool in) const {
    std::vector<std::int64_t> s{images, channels};
    const std::int64_t ext[3] = {in ? t : to, in ? h : ho, in ? w : wo};
    for (int d = 3 - spatial; d < 3; ++d) s.push_back(ext[d]);
    return s;
  }
};

}  // namespace ckpt::conv_detail
