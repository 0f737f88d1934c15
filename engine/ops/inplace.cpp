#include "engine/ops/inplace.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/autograd/grad_mode.hpp"
#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// Nodes whose output shares its input's storage: an in-place op on such an output would have
// to rewrite the base's history too (PyTorch's CopySlices), which this engine does not do.
bool is_view_node(const std::string& name) {
  static constexpr std::array<std::string_view, 9> kViews{
      "ViewBackward0",      "TransposeBackward0", "PermuteBackward0",
      "SliceBackward0",     "ExpandBackward0",    "TBackward0",
      "UnsqueezeBackward0", "SqueezeBackward0",   "AsStridedBackward0"};
  for (auto v : kViews)
    if (name == v) return true;
  return false;
}

void check_inplace(const Tensor& x, const char* op) {
  if (!GradMode::is_enabled()) return;
  if (x.is_leaf() && x.requires_grad())
    throw std::runtime_error(std::string(op) + " on " + x.str() +
                             ": a leaf Variable that requires grad is being used in an in-place "
                             "operation.");
  if (x.grad_fn() && is_view_node(x.grad_fn()->name()))
    throw std::runtime_error(std::string(op) + " on " + x.str() + ", a view made by " +
                             x.grad_fn()->name() +
                             ": in-place operations on views of tensors that require grad are "
                             "not supported by this engine; use the out-of-place op");
}

}  // namespace

Tensor& relu_(Tensor& x) {
  OpScope op("relu_");
  check_inplace(x, "relu_");
  if (!x.is_meta())
    dispatch_floating_all(x.dtype(), "relu_", [&]<typename T>() {
      T* p = x.data<T>();
      const std::int64_t n = x.numel();
      if (x.is_contiguous()) {
        parallel_for(n, [&](std::int64_t i) { p[i] = p[i] < T(0) ? T(0) : p[i]; });
      } else {
        for_each_offset(
            x, [&](std::int64_t off, std::int64_t) { p[off] = p[off] < T(0) ? T(0) : p[off]; });
      }
    });
  x.bump_version();
  // Inputs are read before outputs are rewired, so the node's edge is x's previous history.
  record("ReluBackward0", {x}, {x}, {x}, [](BackwardContext& c) -> TensorList {
    return {dispatch_floating_all(c.grads[0].dtype(), "relu_ backward", [&]<typename T>() {
      return binary_map<T>(
          c.grads[0], c.saved[0], [](T g, T r) { return r > T(0) ? g : T(0); }, "relu backward");
    })};
  });
  return x;
}

Tensor& add_(Tensor& x, const Tensor& other) {
  OpScope op("add_");
  check_inplace(x, "add_");
  if (x.dtype() != other.dtype())
    throw std::invalid_argument("add_: dtype mismatch, " + x.str() + " and " + other.str());
  const Shape b = broadcast_shapes(x.shape(), other.shape(), "add_");
  if (b != x.shape())
    throw std::invalid_argument("add_: output with shape " + shape_str(x.shape()) +
                                " doesn't match the broadcast shape " + shape_str(b));
  if (x.shape() == other.shape() && x.is_contiguous() && other.is_contiguous()) {
    add_inplace_raw(x, other);
  } else {
    Tensor src = contiguous_copy(expand_raw(other, x.shape()));
    add_inplace_raw(x, src);
  }
  x.bump_version();
  record("AddBackward0", {x, other}, {x}, {},
         [so = other.shape(), sx = x.shape()](BackwardContext& c) -> TensorList {
           return {c.needs_input_grad[0] ? c.grads[0] : Tensor(),
                   c.needs_input_grad[1] ? sum_to_raw(c.grads[0], so) : Tensor()};
         });
  return x;
}

}  // namespace ckpt
