#include "engine/tensor/shape.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace ckpt {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  // The product of the non-zero sizes bounds the contiguous strides: an empty tensor of shape
  // [0, 1e13, 1e6] has no element, yet its first stride would overflow int64.
  std::int64_t extent = 1;
  for (auto d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_str(shape));
    const std::int64_t size = std::max<std::int64_t>(d, 1);
    if (extent > std::numeric_limits<std::int64_t>::max() / 16 / size)
      throw std::invalid_argument("shape " + shape_str(shape) + " has too many elements");
    extent *= size;
    n *= d;
  }
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides s(shape.size());
  std::int64_t acc = 1;
  for (auto i = static_cast<std::int64_t>(shape.size()) - 1; i >= 0; --i) {
    s[static_cast<std::size_t>(i)] = acc;
    acc *= std::max<std::int64_t>(shape[static_cast<std::size_t>(i)], 1);
  }
  return s;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t lo = ndim == 0 ? -1 : -ndim;
  const std::int64_t hi = ndim == 0 ? 0 : ndim - 1;
  if (dim < lo || dim > hi)
    throw std::invalid_argument(std::string(op) + ": dimension " + std::to_string(dim) +
                                " out of range for a " + std::to_string(ndim) + "-d tensor");
  return dim < 0 ? dim + std::max<std::int64_t>(ndim, 1) : dim;
}

std::vector<bool> reduced_dims(const std::vector<std::int64_t>& dims, std::int64_t ndim,
                               const char* op) {
  std::vector<bool> reduced(static_cast<std::size_t>(ndim), dims.empty());
  for (auto d : dims) {
    const std::int64_t w = wrap_dim(d, ndim, op);
    if (ndim > 0) reduced[static_cast<std::size_t>(w)] = true;
  }
  return reduced;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(std::string(op) + ": shapes " + shape_str(a) + " and " +
                                  shape_str(b) + " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ckpt
