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

std::string joined(const std::array<std::int64_t, 3>& v, int dims, const char* sep) {
  std::string s;
  for (int d = 3 - dims; d < 3; ++d) {
    if (!s.empty()) s += sep;
    s += std::to_string(v[static_cast<std::size_t>(d)]);
  }
  return s;
}

}  // namespace

std::array<std::int64_t, 3> spread(const std::vector<std::int64_t>& v, int dims, std::int64_t fill,
                                   const std::string& op, const char* what) {
  if (v.size() != 1 && v.size() != static_cast<std::size_t>(dims))
    throw std::invalid_argument(op + ": " + what + " must be a single int, or a tuple of " +
                                std::to_string(dims) + " ints, got " + shape_str(v));
  std::array<std::int64_t, 3> r{fill, fill, fill};
  for (int d = 0; d < dims; ++d)
    r[static_cast<std::size_t>(3 - dims + d)] =
        v.size() == 1 ? v[0] : v[static_cast<std::size_t>(d)];
  return r;
}

void check_pool_input(const std::string& op, const Tensor& x, int dims) {
  if (x.dim() != dims + 1 && x.dim() != dims + 2)
    throw std::invalid_argument(op + ": non-empty " + std::to_string(dims + 1) + "D or " +
                                std::to_string(dims + 2) +
                                "D (batch mode) tensor expected for input, got " + x.str());
  if (!is_floating(x.dtype()))
    throw std::invalid_argument(op + ": expected a floating-point input, got " + x.str());
}

std::string rank_name(const char* base, int dims, const char* suffix) {
  return std::string(base) + std::to_string(dims) + suffix;
}

PoolGeometry pool_geometry(const char* op, const Tensor& x, int dims,
                           const std::vector<std::int64_t>& k_in,
                           const std::vector<std::int64_t>& s_in,
                           const std::vector<std::int64_t>& p_in,
                           const std::vector<std::int64_t>& d_in, bool ceil_mode) {
  const std::string name(op);
  check_pool_input(name, x, dims);
  const auto k = spread(k_in, dims, 1, name, "kernel_size");
  const auto s = s_in.empty() ? k : spread(s_in, dims, 1, name, "stride");
  const auto p = spread(p_in, dims, 0, name, "padding");
  const auto d = spread(d_in, dims, 1, name, "dilation");
  for (std::size_t i = 0; i < 3; ++i) {
    if (k[i] <= 0)
      throw std::invalid_argument(name + ": kernel size should be greater than zero, but got " +
                                  joined(k, dims, " x "));
    if (s[i] <= 0)
      throw std::invalid_argument(name + ": stride should be greater than zero, but got " +
                                  joined(s, dims, " x "));
    if (d[i] <= 0)
      throw std::invalid_argument(name + ": dilation should be greater than zero, but got " +
                                  joined(d, dims, " x "));
    if (p[i] < 0 || p[i] > k[i] / 2)
      throw std::invalid_argument(
          name + ": pad should be at most half of kernel size, but got pad=" +
          std::to_string(p[i]) + " and kernel_size=" + std::to_string(k[i]));
  }
  PoolGeometry g{};
  g.spatial = dims;
  const auto nd = static_cast<std::size_t>(x.dim());
  std::array<std::int64_t, 3> in{1, 1, 1};
  for (int i = 0; i < dims; ++i)
    in[static_cast<std::size_t>(3 - dims + i)] = x.shape()[nd - static_cast<std::size_t>(dims - i)];
  g.planes = 1;
  for (std::size_t i = 0; i + static_cast<std::size_t>(dims) < nd; ++i) g.planes *= x.shape()[i];
  g.t = in[0];
  g.h = in[1];
  g.w = in[2];
  g.kt = k[0];
  g.kh = k[1];
  g.kw = k[2];
  g.st = s[0];
  g.sh = s[1];
  g.sw = s[2];
  g.pt = p[0];
  g.ph = p[1];
  g.pw = p[2];
  g.dt = d[0];
  g.dh = d[1];
  g.dw = d[2];
  std::array<std::int64_t, 3> out{};
  for (std::size_t i = 0; i < 3; ++i)
    out[i] = pooled_size(in[i], k[i], p[i], s[i], d[i], ceil_mode);
  g.to = out[0];
  g.ho = out[1];
  g.wo = out[2];
  if (g.to < 1 || g.ho < 1 || g.wo < 1) {
    const std::int64_t ch = x.shape()[nd - static_cast<std::size_t>(dims) - 1];
    throw std::invalid_argument(name + ": Given input size: (" + std::to_string(ch) + "x" +
                                joined(in, dims, "x") + "). Calculated output size: (" +
                                std::to_string(ch) + "x" + joined(out, dims, "x") +
                                "). Output size is too small");
  }
  return g;
}

Shape pooled_shape(const Tensor& x, const PoolGeometry& g) {
  Shape s = x.shape();
  const std::int64_t out[3] = {g.to, g.ho, g.wo};
  for (int i = 0; i < g.spatial; ++i)
    s[s.size() - static_cast<std::size_t>(g.spatial - i)] = out[3 - g.spatial + i];
  return s;
}

}  // namespace ckpt::pool_detail
