#pragma once

// Private to the pooling ops (pool.cpp: max, pool_avg.cpp: average and adaptive average): the
// window geometry they share, checked and computed in pool_geometry.cpp.

#include <array>
#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt::pool_detail {

struct PoolGeometry {
  std::int64_t planes, h, w, ho, wo;
  std::int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// The geometry of pooling x (3-d or 4-d) as PyTorch computes it, or an error naming `op`.
PoolGeometry pool_geometry(const char* op, const Tensor& x, std::array<std::int64_t, 2> k,
                           std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> p,
                           std::array<std::int64_t, 2> d, bool ceil_mode);

// x's shape with its last two dims replaced by (ho, wo).
Shape pooled_shape(const Tensor& x, std::int64_t ho, std::int64_t wo);

}  // namespace ckpt::pool_detail
