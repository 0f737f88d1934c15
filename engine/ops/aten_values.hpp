#pragma once

// What ATen rules may ask about a captured value's history (shape_ops_aten.cpp, mask_aten.cpp).

#include <string>

#include "engine/ops/schema/aten_node.hpp"

namespace ckpt {

// Whether `graph` is made from factories alone (a mask: full, arange, a lifted number, then
// triu, comparisons, ...), so that it has no gradient: no source and no parameter behind it.
inline bool made_by_factories(const AtenNode& n, const std::string& graph, int depth = 0) {
  const AtenNode::Producer* made = n.producer(graph);
  if (!made || depth > 32) return false;
  if (made->inputs.empty()) return true;  // full, arange, a constant number
  for (const auto& in : made->inputs)
    if (!in.empty() && !made_by_factories(n, in, depth + 1)) return false;
  return true;
}

// Whether `graph` takes a gradient, as far as its history tells: a floating value with a
// parameter (or buffer) behind it. Inputs are taken not to require grad, as a model's data does.
inline bool takes_gradient(const AtenNode& n, const std::string& graph, int depth = 0) {
  if (!is_floating(n.probe(graph).dtype()) || depth > 64) return false;
  if (n.is_parameter(graph)) return true;
  const AtenNode::Producer* made = n.producer(graph);
  if (!made) return false;
  for (const auto& in : made->inputs)
    if (!in.empty() && takes_gradient(n, in, depth + 1)) return true;
  return false;
}

}  // namespace ckpt
