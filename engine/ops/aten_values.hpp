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

}  // namespace ckpt
