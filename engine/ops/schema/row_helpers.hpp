#pragma once

// Building blocks for the rows in engine/ops/*_rows.cpp: kernel entries for the common
// signatures, ONNX rules that map one ONNX op onto one engine op, default costs, and the
// pieces of the PyTorch spellings (the code export in engine/plan reads them through the rows).

#include "engine/ops/schema/op_schema.hpp"

namespace ckpt::rows {

// Kernel entries: a direct engine op call, so all the memory behaviour (what is saved, what
// is a view) is the engine op's.
template <Tensor (*F)(const Tensor&)>
TensorList unary(const OpCall&, const TensorList& x) {
  return {F(x[0])};
}
template <Tensor (*F)(const Tensor&, const Tensor&)>
TensorList binary(const OpCall&, const TensorList& x) {
  return {F(x[0], x[1])};
}
template <Tensor (*F)(const Tensor&, double)>
TensorList with_scalar(const OpCall& op, const TensorList& x) {
  return {F(x[0], attr_double(op, "value"))};
}

// The ONNX op translates to the engine op `Type` on its first input, no attributes.
template <const char* Type>
void onnx_unary(OnnxNode& n) {
  n.define(n.y(), n.emit_op(Type, {n.input(0, "first").graph}, {}, n.y()));
}

// One pass over inputs and outputs: what elementwise, shape and copy ops cost.
OpCost elementwise_cost(const OpCall& op, const TensorList& inputs, const TensorList& outputs);

// A row whose cost is one pass over its tensors (shape ops, pooling): its kernel, PyTorch
// spellings and ONNX rules.
OpSchema one_pass_row(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&),
                      PythonExpression python, std::vector<OnnxRule> onnx = {},
                      PythonModule python_module = nullptr);

// Native layers shared by many rows (NativeLayer::build): the op of the layer's own type on one
// input with the "dim" key as its attribute (softmax, squeeze), with the "shape" key (reshape,
// view); a reduction over all elements or over "dims" (`<type>_dims`, with "keepdim"); and the
// arithmetic of two inputs or of one input and a "param", an "other" value or a "scalar"
// (`<type>_scalar`).
ValueNames layer_with_dim(NativeLayerCall& c);
ValueNames layer_with_shape(NativeLayerCall& c);
ValueNames layer_reduction(NativeLayerCall& c);
ValueNames layer_arithmetic(NativeLayerCall& c);

// Spellings shared by many rows.
std::string python_call(const char* callee, const std::vector<std::string>& args);

// Python values.
std::string number(double v);  // shortest round-trip spelling, "1.0" for integers
std::string ints(const std::vector<std::int64_t>& v);  // "(1, 2)", "(3,)"
// A pair attribute spelled as PyTorch accepts it: "2" when both are equal, else "(2, 3)".
std::string pair(const std::vector<std::int64_t>& v);
std::string join(const std::vector<std::string>& xs);  // "a, b, c"
// x[:, :, item] for an index or slice `item` on `dim`.
std::string index_expr(const std::string& x, std::int64_t dim, const std::string& item);
// A negative dim counted from the end of `shape` (unchanged when the shape is unknown).
std::int64_t wrap(std::int64_t d, const Shape& shape);

// Argument i of a PythonExpression's arguments: "" when absent, or "None" (a positional
// optional tensor).
std::string arg(const std::vector<std::string>& a, std::size_t i);
std::string arg_or_none(const std::vector<std::string>& a, std::size_t i);

// PythonExpression rows for the common forms: Prefix + Name + "(x)" ("torch.exp(x)",
// "F.relu(x)"), "x.Name()", "x Op y", "x Op value" (the "value" attribute), and the
// PythonModule "nn.Class()".
template <const char* Prefix, const char* Name>
std::string python_function(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return std::string(Prefix) + Name + "(" + arg(a, 0) + ")";
}
template <const char* Name>
std::string python_method(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + "." + Name + "()";
}
template <const char* Op>
std::string python_infix(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + Op + arg(a, 1);
}
template <const char* Op>
std::string python_scalar(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + Op + number(attr_double(op, "value"));
}
template <const char* Class>
std::string python_nn(const OpCall&, const std::vector<Shape>&) {
  return std::string("nn.") + Class + "()";
}
inline constexpr char kTorch[] = "torch.", kF[] = "F.";

}  // namespace ckpt::rows
