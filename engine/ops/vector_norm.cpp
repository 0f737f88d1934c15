#include "engine/ops/vector_norm.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// For each element of a tensor of `shape` (row-major), the flat index of its reduction's output
// in the keepdim shape (reduced dims of size 1).
struct ReductionIndex {
  Shape shape;
  std::vector<bool> reduced;
  std::vector<std::int64_t> out_strides;
  std::int64_t outputs = 1;

  ReductionIndex(const Shape& s, const std::vector<std::int64_t>& dims) : shape(s) {
    reduced.assign(s.size(), dims.empty());
    for (std::int64_t d : dims) reduced[static_cast<std::size_t>(d)] = true;
    out_strides.assign(s.size(), 0);
    for (std::size_t d = s.size(); d-- > 0;)
      if (!reduced[d]) {
        out_strides[d] = outputs;
        outputs *= s[d];
      }
  }
  Shape keep_shape() const {
    Shape k = shape;
    for (std::size_t d = 0; d < k.size(); ++d)
      if (reduced[d]) k[d] = 1;
    return k;
  }
  // f(offset of x, output index) for every element of x.
  template <typename F>
  void each(const Tensor& x, F&& f) const {
    std::vector<std::int64_t> idx(shape.size(), 0);
    std::int64_t o = 0;
    for_each_offset(x, [&](std::int64_t off, std::int64_t) {
      f(off, o);
      for (std::size_t d = shape.size(); d-- > 0;) {
        if (++idx[d] < shape[d]) {
          o += out_strides[d];
          break;
        }
        o -= out_strides[d] * (shape[d] - 1);
        idx[d] = 0;
      }
    });
  }
};

std::vector<std::int64_t> wrapped(const std::vector<std::int64_t>& dims, std::int64_t rank) {
  std::vector<std::int64_t> out;
  for (std::int64_t d : dims) {
    const std::int64_t w = d < 0 ? d + rank : d;
    if (w < 0 || w >= rank)
      throw std::invalid_argument("norm: dim " + std::to_string(d) + " out of range for rank " +
                                  std::to_string(rank));
    out.push_back(w);
  }
  return out;
}

}  // namespace

Tensor vector_norm(const Tensor& x, double p, const std::vector<std::int64_t>& dims_in,
                   bool keepdim) {
  OpScope scope("norm");
  if (!(p >= 1) || !std::isfinite(p))
    throw std::invalid_argument("norm: p must be finite and at least 1, got " + std::to_string(p));
  const auto dims = wrapped(dims_in, x.dim());
  const ReductionIndex r(x.shape(), dims);
  Shape out_shape;
  for (std::size_t d = 0; d < x.shape().size(); ++d)
    if (!r.reduced[d] || keepdim) out_shape.push_back(r.reduced[d] ? 1 : x.shape()[d]);
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "norm", [&]<typename T>() {
      std::vector<double> acc(static_cast<std::size_t>(r.outputs), 0.0);
      const T* px = x.data<T>();
      r.each(x, [&](std::int64_t off, std::int64_t o) {
        const double v = std::fabs(static_cast<double>(px[off]));
        acc[static_cast<std::size_t>(o)] += p == 2 ? v * v : std::pow(v, p);
      });
      T* po = out.data<T>();
      for (std::size_t o = 0; o < acc.size(); ++o)
        po[o] = static_cast<T>(p == 2 ? std::sqrt(acc[o]) : std::pow(acc[o], 1.0 / p));
    });
  record("NormBackward1", {x}, {out}, {x, out},
         [p, dims, shape = x.shape()](BackwardContext& c) -> TensorList {
           const Tensor& x0 = c.saved[0];
           const ReductionIndex ri(shape, dims);
           const Tensor g = as_contiguous(c.grads[0]);
           const Tensor norm = as_contiguous(c.saved[1]);
           Tensor gx = Tensor::empty(shape, x0.dtype());
           if (gx.is_meta()) return {gx};
           dispatch_floating_all(x0.dtype(), "norm backward", [&]<typename T>() {
             const T* px = x0.data<T>();
             const T* pg = g.data<T>();
             const T* pn = norm.data<T>();
             T* o = gx.data<T>();
             std::int64_t i = 0;
             ri.each(x0, [&](std::int64_t off, std::int64_t k) {
               const double v = static_cast<double>(px[off]);
               const double n = static_cast<double>(pn[k]);
               double d = 0;
               if (n != 0)
                 d = p == 2 ? v / n
                            : (v < 0   ? -1.0
                               : v > 0 ? 1.0
                                       : 0.0) *
                                  std::pow(std::fabs(v), p - 1) / std::pow(n, p - 1);
               o[i++] = static_cast<T>(static_cast<double>(pg[k]) * d);
             });
           });
           return {gx};
         });
  return out;
}

}  // namespace ckpt
