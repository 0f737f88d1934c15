#pragma once

// Private to the pooling ops (pool.cpp: max, pool_avg.cpp: average, pool_adaptive.cpp: the
// adaptive ones): the window geometry they share, checked and computed in pool_geometry.cpp.
// As for the convolutions (conv_geometry.hpp), a pool of fewer spatial dimensions is the 3-D
// one with unit leading extents: [planes, t, h, w] with t = 1 below 3-D.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt::pool_detail {

struct PoolGeometry {
  int spatial = 2;
  std::int64_t planes, t, h, w, to, ho, wo;
  std::int64_t kt, kh, kw, st, sh, sw, pt, ph, pw, dt, dh, dw;
  std::int64_t in_size() const { return t * h * w; }
  std::int64_t out_size() const { return to * ho * wo; }
  // One plane per (image, channel): what the 2-D kernels compute.
  bool planar() const { return t == 1 && kt == 1 && to == 1; }
};

// The geometry of pooling x over its last `dims` dims (x batched or not) as PyTorch computes
// it, or an error naming `op`. Window values: one per dimension or one for all; an empty stride
// is the kernel.
PoolGeometry pool_geometry(const char* op, const Tensor& x, int dims,
                           const std::vector<std::int64_t>& k, const std::vector<std::int64_t>& s,
                           const std::vector<std::int64_t>& p, const std::vector<std::int64_t>& d,
                           bool ceil_mode);

// x's shape with its last `g.spatial` dims replaced by the output's.
Shape pooled_shape(const Tensor& x, const PoolGeometry& g);

// The last `dims` of three extents (leading ones of size 1), and x's spatial extents so placed.
std::array<std::int64_t, 3> spread(const std::vector<std::int64_t>& v, int dims, std::int64_t fill,
                                   const std::string& op, const char* what);
// Checks x's rank for a pool over `dims` dims: [N, C, *] or unbatched [C, *], non-empty.
void check_pool_input(const std::string& op, const Tensor& x, int dims);
// The PyTorch name of a rank's function or node: rank_name("MaxPool", 3, "D") = "MaxPool3D".
std::string rank_name(const char* base, int dims, const char* suffix);

}  // namespace ckpt::pool_detail
