#pragma once

// What several ops' ONNX rules share: load-time arithmetic on known values (shapes, mostly
// int64) and the reading of window attributes.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ops/schema/onnx_node.hpp"

namespace ckpt::onnx_rules {

using Ints = std::vector<std::int64_t>;

// A tensor of `shape` and dtype `d` holding `v`.
Tensor make(const std::vector<double>& v, const Shape& shape, DType d);
// Elementwise f over a and b broadcast (numpy rules), in a's dtype.
Tensor fold_binary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                   const char* op);
// Elementwise f over x, in x's dtype.
Tensor fold_unary(const Tensor& x, const std::function<double(double)>& f);
std::int64_t wrap_axis(std::int64_t axis, std::int64_t rank, const char* what);
// ONNX Slice's clamping of start/end for a dimension of size n.
std::pair<std::int64_t, std::int64_t> slice_bounds(std::int64_t start, std::int64_t end,
                                                   std::int64_t step, std::int64_t n);
// A double from an int64 initializer read back: INT64_MAX/MIN survive the trip.
std::int64_t to_index(double v);

// Whether every input present is known at load time.
bool all_inputs_constant(const OnnxNode& n);
// A single known number (x op c: what PyTorch records for a Python scalar).
bool is_scalar(const OnnxValue* v);

// Window attributes of Conv and the pools over 1, 2 or 3 spatial dimensions: kernel, strides,
// symmetric pads (one per dimension), dilations. Another rank, or asymmetric padding, is a
// named error.
struct Window {
  Ints kernel, strides, pads, dilations;
};
// `what` names the op in messages. A convolution's kernel_shape may be left out: then it is the
// weight's (input 1) spatial shape.
enum class KernelShape : std::uint8_t { attribute, attribute_or_weight };
Window read_window(const OnnxNode& n, const char* what,
                   KernelShape kernel = KernelShape::attribute);

// The axes of Squeeze/Unsqueeze/ReduceSum: an attribute, or from opset 13 an input.
Ints axes_input_or_attr(const OnnxNode& n, std::size_t input, std::int64_t from_opset);

}  // namespace ckpt::onnx_rules
