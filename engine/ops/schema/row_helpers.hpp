#pragma once

// Building blocks for the rows in engine/ops/*_rows.cpp: kernel entries for the common
// signatures, ONNX rules that map one ONNX op onto one engine op, and default costs.

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

// Spellings shared by many rows.
std::string python_call(const char* callee, const std::vector<std::string>& args);

}  // namespace ckpt::rows
