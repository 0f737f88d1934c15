#include "engine/ops/reduce.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/memory_semantics.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// The gradient of a reduction, broadcast back to the input's shape.
Tensor expand_back(const Tensor& g, const Shape& in_shape, const std::vector<std::int64_t>& dims,
                   bool keepdim) {
  Shape kept = in_shape;
  const auto reduced = reduced_dims(dims, static_cast<std::int64_t>(in_shape.size()), "sum");
  for (std::size_t d = 0; d < kept.size(); ++d)
    if (reduced[d]) kept[d] = 1;
  Tensor gk = as_contiguous(g);
  if (!keepdim) gk = gk.alias(kept, contiguous_strides(kept), gk.offset());
  return contiguous_copy(expand_raw(gk, in_shape));
}

// grad / n broadcast back to the input's shape, for mean. PyTorch's CUDA MeanBackward divides
// the expanded view in one TensorIterator pass (one allocation); the engine's CPU kernels copy
// the expansion first.
Tensor mean_back(const Tensor& g, const Shape& in_shape, const std::vector<std::int64_t>& dims,
                 bool keepdim, std::int64_t n) {
  const double scale = 1.0 / static_cast<double>(n);
  if (memory_semantics(g.device()).kernels != KernelAllocations::pytorch_cuda)
    return mul_scalar_raw(expand_back(g, in_shape, dims, keepdim), scale);
  Shape kept = in_shape;
  const auto reduced = reduced_dims(dims, static_cast<std::int64_t>(in_shape.size()), "mean");
  for (std::size_t d = 0; d < kept.size(); ++d)
    if (reduced[d]) kept[d] = 1;
  Tensor gk = as_contiguous(g);
  if (!keepdim) gk = gk.alias(kept, contiguous_strides(kept), gk.offset());
  return mul_scalar_raw(expand_raw(gk, in_shape), scale);
}

std::int64_t reduced_count(const Shape& s, const std::vector<std::int64_t>& dims) {
  const auto reduced = reduced_dims(dims, static_cast<std::int64_t>(s.size()), "mean");
  std::int64_t n = 1;
  for (std::size_t d = 0; d < s.size(); ++d)
    if (reduced[d]) n *= s[d];
  return n;
}

// x's kept dimensions first, then the reduced ones, as strides of x (a view's layout).
struct Reduction {
  Shape shape;                     // kept sizes, then reduced sizes
  Strides strides;                 // x's strides in that order
  std::vector<std::size_t> order;  // x's dimension at each position
  std::int64_t rows = 1, count = 1;
  Shape out_shape;
};
Reduction reduction(const Tensor& x, const std::vector<std::int64_t>& dims_in, bool keepdim) {
  const auto nd = static_cast<std::int64_t>(x.dim());
  const std::vector<bool> reduced = reduced_dims(dims_in, nd, "amax");
  Reduction r;
  Shape tail;
  Strides tail_strides;
  std::vector<std::size_t> tail_order;
  for (std::int64_t d = 0; d < nd; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (reduced[i] && x.shape()[i] == 0)
      throw std::invalid_argument("amax: cannot reduce over a dimension of size 0 in " + x.str());
    (reduced[i] ? tail : r.shape).push_back(x.shape()[i]);
    (reduced[i] ? tail_strides : r.strides).push_back(x.strides()[i]);
    (reduced[i] ? tail_order : r.order).push_back(i);
    if (!reduced[i] || keepdim) r.out_shape.push_back(reduced[i] ? 1 : x.shape()[i]);
    (reduced[i] ? r.count : r.rows) *= x.shape()[i];
  }
  r.shape.insert(r.shape.end(), tail.begin(), tail.end());
  r.strides.insert(r.strides.end(), tail_strides.begin(), tail_strides.end());
  r.order.insert(r.order.end(), tail_order.begin(), tail_order.end());
  return r;
}

}  // namespace

Tensor sum(const Tensor& x) {
  OpScope op("sum");
  Tensor out = sum_dims_raw(x, {}, false);
  record("SumBackward0", {x}, {out}, {}, [s = x.shape()](BackwardContext& c) -> TensorList {
    return {expand_back(c.grads[0], s, {}, false)};
  });
  return out;
}

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  OpScope op("sum");
  Tensor out = sum_dims_raw(x, dims, keepdim);
  record("SumBackward1", {x}, {out}, {},
         [s = x.shape(), dims, keepdim](BackwardContext& c) -> TensorList {
           return {expand_back(c.grads[0], s, dims, keepdim)};
         });
  return out;
}

Tensor mean(const Tensor& x) {
  OpScope op("mean");
  const auto n = x.numel();
  Tensor out = mul_scalar_raw(sum_dims_raw(x, {}, false), 1.0 / static_cast<double>(n));
  record("MeanBackward0", {x}, {out}, {}, [s = x.shape(), n](BackwardContext& c) -> TensorList {
    return {mean_back(c.grads[0], s, {}, false, n)};
  });
  return out;
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  OpScope op("mean");
  const auto n = reduced_count(x.shape(), dims);
  Tensor out = mul_scalar_raw(sum_dims_raw(x, dims, keepdim), 1.0 / static_cast<double>(n));
  record("MeanBackward1", {x}, {out}, {x},
         [s = x.shape(), dims, keepdim, n](BackwardContext& c) -> TensorList {
           return {mean_back(c.grads[0], s, dims, keepdim, n)};
         });
  return out;
}

Tensor amax(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  OpScope op("amax");
  const Reduction r = reduction(x, dims, keepdim);
  // The reduced elements of each output next to each other.
  const Tensor xp = contiguous_copy(x.alias(r.shape, r.strides, x.offset()));
  Tensor out = Tensor::empty(r.out_shape, x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "amax", [&]<typename T>() {
      const T* p = xp.data<T>();
      T* o = out.data<T>();
      for (std::int64_t row = 0; row < r.rows; ++row)
        o[row] = *std::max_element(p + row * r.count, p + (row + 1) * r.count);
    });
  record("AmaxBackward0", {x}, {out}, {x, out},
         [r, shape = x.shape()](BackwardContext& c) -> TensorList {
           const Tensor g = as_contiguous(c.grads[0]), res = as_contiguous(c.saved[1]);
           const Tensor xs = c.saved[0];
           const Tensor xp2 = contiguous_copy(xs.alias(r.shape, r.strides, xs.offset()));
           Tensor dxp = Tensor::zeros(r.shape, g.dtype());
           if (!dxp.is_meta())
             dispatch_floating_all(g.dtype(), "amax backward", [&]<typename T>() {
               const T *p = xp2.data<T>(), *gp = g.data<T>(), *rp = res.data<T>();
               T* d = dxp.data<T>();
               for (std::int64_t row = 0; row < r.rows; ++row) {
                 const T* begin = p + row * r.count;
                 const auto ties = std::count(begin, begin + r.count, rp[row]);
                 for (std::int64_t k = 0; k < r.count; ++k)
                   if (begin[k] == rp[row]) d[row * r.count + k] = gp[row] / static_cast<T>(ties);
               }
             });
           // Back to x's layout: dx viewed in the reduction's order takes dxp.
           Tensor dx = Tensor::empty(shape, g.dtype());
           const Strides cs = contiguous_strides(shape);
           Strides perm_strides;
           for (auto d : r.order) perm_strides.push_back(cs[d]);
           Tensor view = dx.alias(r.shape, perm_strides, 0);
           copy_into_raw(view, dxp);
           return {dx};
         });
  return out;
}

}  // namespace ckpt
