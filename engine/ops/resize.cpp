#include "engine/ops/resize.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

// PyTorch's nearest_idx for an output size without a scale factor: the float scale in / out.
std::vector<std::int64_t> source_index(std::int64_t in, std::int64_t out) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (std::int64_t o = 0; o < out; ++o)
    idx[static_cast<std::size_t>(o)] =
        std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
  return idx;
}

}  // namespace

Tensor upsample_nearest2d(const Tensor& x_in, std::array<std::int64_t, 2> size) {
  OpScope op("upsample_nearest2d");
  if (x_in.dim() != 4 || !is_floating(x_in.dtype()))
    throw std::invalid_argument("upsample_nearest2d: expected a floating-point [N, C, H, W], got " +
                                x_in.str());
  if (size[0] <= 0 || size[1] <= 0)
    throw std::invalid_argument("upsample_nearest2d: output size must be positive, got [" +
                                std::to_string(size[0]) + ", " + std::to_string(size[1]) + "]");
  const Tensor x = as_contiguous(x_in);
  const std::int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const std::int64_t ho = size[0], wo = size[1];
  const auto ih = source_index(h, ho), iw = source_index(w, wo);
  Tensor out = Tensor::empty({x.shape()[0], x.shape()[1], ho, wo}, x.dtype());
  if (!out.is_meta())
    dispatch_floating(x.dtype(), "upsample_nearest2d", [&]<typename T>() {
      const T* xp = x.data<T>();
      T* op_ = out.data<T>();
#pragma omp parallel for schedule(static) if (planes * ho * wo > (1 << 16))
      for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t oh = 0; oh < ho; ++oh)
          for (std::int64_t ow = 0; ow < wo; ++ow)
            op_[(p * ho + oh) * wo + ow] = xp[(p * h + ih[static_cast<std::size_t>(oh)]) * w +
                                              iw[static_cast<std::size_t>(ow)]];
    });
  record("UpsampleNearest2DBackward0", {x_in}, {out}, {},
         [=, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating(gy.dtype(), "upsample_nearest2d backward", [&]<typename T>() {
               const T* gp = gy.data<T>();
               T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (planes * ho * wo > (1 << 16))
               for (std::int64_t p = 0; p < planes; ++p)
                 for (std::int64_t oh = 0; oh < ho; ++oh)
                   for (std::int64_t ow = 0; ow < wo; ++ow)
                     dp[(p * h + ih[static_cast<std::size_t>(oh)]) * w +
                        iw[static_cast<std::size_t>(ow)]] += gp[(p * ho + oh) * wo + ow];
             });
           return {dx};
         });
  return out;
}

}  // namespace ckpt
