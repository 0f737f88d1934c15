#pragma once

// Private to shape_ops_onnx.cpp and shape_ops_onnx_indexing.cpp: helpers their rules share.

#include <vector>

#include "engine/ops/schema/onnx_node.hpp"
#include "engine/ops/schema/onnx_support.hpp"

namespace ckpt::shape_onnx {

inline const Tensor& first(const OnnxNode& n) {
  return n.input(0, "first").probe;
}

inline bool foldable(const OnnxNode& n) {
  return onnx_rules::all_inputs_constant(n) && n.has_input(0);
}

// Emits one engine op per entry of `attrs`, each on the previous result; the last is named y.
inline void emit_chain(OnnxNode& n, const char* type, const std::vector<Attributes>& attrs) {
  const OnnxValue* cur = &n.input(0, "first");
  if (attrs.empty()) return n.alias(n.y(), *cur);
  for (std::size_t i = 0; i < attrs.size(); ++i)
    cur = &n.emit_op(type, {cur->graph}, attrs[i], i + 1 == attrs.size() ? n.y() : "");
  n.define(n.y(), *cur);
}

}  // namespace ckpt::shape_onnx
