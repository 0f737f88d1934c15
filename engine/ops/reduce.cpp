#include "engine/ops/reduce.hpp"

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

// The gradient of a reduction, broadcast back to the input's shape.
Tensor expand_back(const Tensor& g, const Shape& in_shape, const std::vector<std::int64_t>& dims,
                   bool keepdim) {
  Shape kept = in_shape;
  const auto nd = static_cast<std::int64_t>(in_shape.size());
  if (dims.empty()) {
    for (auto& d : kept) d = 1;
  } else {
    for (auto d : dims) kept[static_cast<std::size_t>(wrap_dim(d, nd, "sum"))] = 1;
  }
  Tensor gk = as_contiguous(g);
  if (!keepdim) gk = gk.alias(kept, contiguous_strides(kept), gk.offset());
  return contiguous_copy(expand_raw(gk, in_shape));
}

std::int64_t reduced_count(const Shape& s, const std::vector<std::int64_t>& dims) {
  if (dims.empty()) return shape_numel(s);
  std::int64_t n = 1;
  for (auto d : dims)
    n *= s[static_cast<std::size_t>(wrap_dim(d, static_cast<std::int64_t>(s.size()), "mean"))];
  return n;
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
    return {mul_scalar_raw(expand_back(c.grads[0], s, {}, false), 1.0 / static_cast<double>(n))};
  });
  return out;
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  OpScope op("mean");
  const auto n = reduced_count(x.shape(), dims);
  Tensor out = mul_scalar_raw(sum_dims_raw(x, dims, keepdim), 1.0 / static_cast<double>(n));
  record("MeanBackward1", {x}, {out}, {x},
         [s = x.shape(), dims, keepdim, n](BackwardContext& c) -> TensorList {
           return {mul_scalar_raw(expand_back(c.grads[0], s, dims, keepdim),
                                  1.0 / static_cast<double>(n))};
         });
  return out;
}

}  // namespace ckpt
