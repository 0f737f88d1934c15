#pragma once

// DOT text out, `dot -Tjson0` text in. Qt-free and locale-independent.

#include <string>
#include <string_view>

#include "ui/layout/layout_types.hpp"

namespace ckpt::ui {

// The graph as DOT, clusters nested as given (never flattened: dot is fast with a deep cluster
// hierarchy and very slow with hundreds of nodes in one cluster).
std::string toDot(const LayoutGraph& graph);

// Parses dot's -Tjson0 output for `graph` (ids and edge order as in toDot). Coordinates come
// back in points with y flipped so that y grows downwards. Throws std::runtime_error naming
// what is malformed.
LayoutResult parseDotJson(std::string_view json, const LayoutGraph& graph);

}  // namespace ckpt::ui
