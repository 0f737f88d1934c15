#include "engine/ops/schema/onnx_support.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace ckpt::onnx_rules {

Tensor make(const std::vector<double>& v, const Shape& shape, DType d) {
  switch (d) {
    case DType::f32:
      return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
    case DType::f64:
      return Tensor::from_vector(v, shape);
    case DType::i64: {
      std::vector<std::int64_t> w(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        // A double outside int64's range (or NaN) has no int64 value: casting it is undefined
        // behaviour (found by fuzz_onnx_model: Equal on a float constant of 9.2e18).
        if (!(v[i] >= -0x1p63 && v[i] < 0x1p63))
          throw std::invalid_argument("the constant value " + std::to_string(v[i]) +
                                      " does not fit an int64");
        w[i] = static_cast<std::int64_t>(v[i]);
      }
      return Tensor::from_vector(w, shape);
    }
    case DType::b8:
      // Load-time values keep booleans as int64 0/1 (ONNX's folds compute on doubles).
      return make(v, shape, DType::i64);
    case DType::bf16:
    case DType::f16:
    case DType::i32:
      break;
  }
  throw std::invalid_argument(std::string("a load-time constant of type ") + dtype_name(d) +
                              " is not supported");
}

namespace {
// Index into a tensor of shape `in` broadcast to `out`, for flat output index `k`.
std::int64_t broadcast_index(const Shape& out, const Shape& in, std::int64_t k) {
  std::int64_t idx = 0, stride = 1;
  for (std::int64_t d = static_cast<std::int64_t>(out.size()) - 1; d >= 0; --d) {
    const std::int64_t coord = k % out[static_cast<std::size_t>(d)];
    k /= out[static_cast<std::size_t>(d)];
    const std::int64_t id = d - static_cast<std::int64_t>(out.size() - in.size());
    if (id < 0) continue;
    const std::int64_t size = in[static_cast<std::size_t>(id)];
    if (size != 1) idx += coord * stride;
    stride *= size;
  }
  return idx;
}
}  // namespace

Tensor fold_binary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                   const char* op) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const auto va = a.to_vector(), vb = b.to_vector();
  std::vector<double> out(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = f(va[static_cast<std::size_t>(
                   broadcast_index(shape, a.shape(), static_cast<std::int64_t>(k)))],
               vb[static_cast<std::size_t>(
                   broadcast_index(shape, b.shape(), static_cast<std::int64_t>(k)))]);
  return make(out, shape, a.dtype());
}

Tensor fold_unary(const Tensor& x, const std::function<double(double)>& f) {
  auto v = x.to_vector();
  for (auto& e : v) e = f(e);
  return make(v, x.shape(), x.dtype());
}

// ONNX's axis attributes name a dimension that exists: a 0-d value has none (indexing its empty
// shape was undefined behaviour; fuzz_onnx_model).
std::int64_t wrap_axis(std::int64_t axis, std::int64_t rank, const char* what) {
  if (rank <= 0)
    throw std::invalid_argument(std::string(what) + ": axis " + std::to_string(axis) +
                                " of a 0-d value, which has no axes");
  return wrap_dim(axis, rank, what);
}

std::pair<std::int64_t, std::int64_t> slice_bounds(std::int64_t start, std::int64_t end,
                                                   std::int64_t step, std::int64_t n) {
  auto clampi = [](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    return std::max(lo, std::min(v, hi));
  };
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) return {clampi(start, 0, n), clampi(end, 0, n)};
  return {clampi(start, 0, n - 1), clampi(end, -1, n - 1)};
}

std::int64_t to_index(double v) {
  return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<std::int64_t>(v);
}

bool all_inputs_constant(const OnnxNode& n) {
  for (std::size_t i = 0; i < n.input_count(); ++i)
    if (const OnnxValue* v = n.input_or_null(i); v && !v->constant) return false;
  return true;
}

bool is_scalar(const OnnxValue* v) {
  return v && v->constant && v->probe.numel() == 1;
}

Window read_window(const OnnxNode& n, const char* what, KernelShape kernel_shape) {
  const std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    n.fail("auto_pad=" + auto_pad + " is not supported (give explicit pads)");
  Ints kernel = n.attr_ints("kernel_shape");
  if (kernel_shape == KernelShape::attribute_or_weight && kernel.empty()) {
    const Shape& w = n.input(1, "weight").probe.shape();
    if (w.size() > 2) kernel.assign(w.begin() + 2, w.end());
  }
  const std::size_t dims = kernel.size();
  if (dims < 1 || dims > 3 || n.rank() != static_cast<std::int64_t>(dims) + 2)
    n.fail(std::string(what) + " over " + std::to_string(dims) + " spatial dimensions on a rank-" +
           std::to_string(n.rank()) +
           " input is not supported (1, 2 or 3 spatial dimensions, on [N, C, *spatial])");
  Ints strides = n.attr_ints("strides"), pads = n.attr_ints("pads"),
       dilations = n.attr_ints("dilations");
  if (strides.empty()) strides.assign(dims, 1);
  if (dilations.empty()) dilations.assign(dims, 1);
  if (pads.empty()) pads.assign(2 * dims, 0);
  if (strides.size() != dims || dilations.size() != dims)
    n.fail("strides " + shape_str(strides) + " and dilations " + shape_str(dilations) +
           " must have one value per spatial dimension (" + std::to_string(dims) + ")");
  bool symmetric = pads.size() == 2 * dims;
  for (std::size_t d = 0; symmetric && d < dims; ++d) symmetric = pads[d] == pads[d + dims];
  if (!symmetric) n.fail("asymmetric pads " + shape_str(pads) + " are not supported");
  pads.resize(dims);
  return Window{kernel, strides, pads, dilations};
}

Ints axes_input_or_attr(const OnnxNode& n, std::size_t input, std::int64_t from_opset) {
  if (n.opset() >= from_opset) return n.has_input(input) ? n.constant_ints(input, "axes") : Ints{};
  return n.attr_ints("axes");
}

}  // namespace ckpt::onnx_rules
