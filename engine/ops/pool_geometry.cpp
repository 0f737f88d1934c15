#include <stdexcept>
#include <string>

#include "engine/ops/pool_detail.hpp"

// The output size of a pooling window and the checks on its arguments, as PyTorch has them.

namespace ckpt::pool_detail {

namespace {

std::int64_t pooled_size(std::int64_t in, std::int64_t k, std::int64_t p, std::int64_t s,
                         std::int64_t d, bool ceil_mode) {
  // PyTorch's pooling_output_shape: floor (or ceil) division, and with ceil_mode the last
  // window must start inside the input or the left padding.
  const std::int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  std::int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace

PoolGeometry pool_geometry(const char* op, const Tensor& x, std::array<std::int64_t, 2> k,
                           std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> p,
                           std::array<std::int64_t, 2> d, bool ceil_mode) {
  const std::string name(op);
  if (x.dim() != 3 && x.dim() != 4)
    throw std::invalid_argument(name +
                                ": non-empty 3D or 4D (batch mode) tensor expected for "
                                "input, got " +
                                x.str());
  if (!is_floating(x.dtype()))
    throw std::invalid_argument(name + ": expected a floating-point input, got " + x.str());
  if (k[0] <= 0 || k[1] <= 0)
    throw std::invalid_argument(name + ": kernel size should be greater than zero, but got kH: " +
                                std::to_string(k[0]) + " kW: " + std::to_string(k[1]));
  if (s[0] <= 0 || s[1] <= 0)
    throw std::invalid_argument(name + ": stride should be greater than zero, but got dH: " +
                                std::to_string(s[0]) + " dW: " + std::to_string(s[1]));
  if (d[0] <= 0 || d[1] <= 0)
    throw std::invalid_argument(name +
                                ": dilation should be greater than zero, but got "
                                "dilationH: " +
                                std::to_string(d[0]) + " dilationW: " + std::to_string(d[1]));
  for (int i = 0; i < 2; ++i)
    if (p[i] < 0 || p[i] > k[i] / 2)
      throw std::invalid_argument(
          name + ": pad should be at most half of kernel size, but got pad=" +
          std::to_string(p[i]) + " and kernel_size=" + std::to_string(k[i]));
  PoolGeometry g{};
  const auto nd = x.dim();
  g.h = x.shape()[static_cast<std::size_t>(nd - 2)];
  g.w = x.shape()[static_cast<std::size_t>(nd - 1)];
  g.planes = nd == 4 ? x.shape()[0] * x.shape()[1] : x.shape()[0];
  g.kh = k[0];
  g.kw = k[1];
  g.sh = s[0];
  g.sw = s[1];
  g.ph = p[0];
  g.pw = p[1];
  g.dh = d[0];
  g.dw = d[1];
  g.ho = pooled_size(g.h, g.kh, g.ph, g.sh, g.dh, ceil_mode);
  g.wo = pooled_size(g.w, g.kw, g.pw, g.sw, g.dw, ceil_mode);
  if (g.ho < 1 || g.wo < 1) {
    const std::int64_t ch = nd == 4 ? x.shape()[1] : x.shape()[0];
    throw std::invalid_argument(
        name + ": Given input size: (" + std::to_string(ch) + "x" + std::to_string(g.h) + "x" +
        std::to_string(g.w) + "). Calculated output size: (" + std::to_string(ch) + "x" +
        std::to_string(g.ho) + "x" + std::to_string(g.wo) + "). Output size is too small");
  }
  return g;
}

Shape pooled_shape(const Tensor& x, std::int64_t ho, std::int64_t wo) {
  Shape s = x.shape();
  s[s.size() - 2] = ho;
  s[s.size() - 1] = wo;
  return s;
}

}  // namespace ckpt::pool_detail
