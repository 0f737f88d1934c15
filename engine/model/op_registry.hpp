#pragma once

// The op kinds a Model can contain (OpNode::op_type) are the rows of the op table
// (engine/ops/schema/op_schema.hpp); this is the bridge from a graph node to a row.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

using OpKind = OpSchema;

inline OpCall op_call(const OpNode& n) {
  return OpCall{n.name, n.op_type, n.attrs};
}

// Null when the kind is unknown.
const OpKind* find_op_kind(const std::string& type);
std::vector<std::string> op_kinds();  // sorted

// Runs `node` with `kind` (which must be find_op_kind(node.op_type)); an engine error comes
// back naming the node, its op and its input shapes.
TensorList run_op_node(const OpKind& kind, const OpNode& node, const TensorList& inputs);

// Attribute access; a missing or mistyped attribute is an error naming the node.
bool has_attr(const OpNode& n, const std::string& key);
std::int64_t attr_int(const OpNode& n, const std::string& key);
std::int64_t attr_int(const OpNode& n, const std::string& key, std::int64_t fallback);
double attr_double(const OpNode& n, const std::string& key);
double attr_double(const OpNode& n, const std::string& key, double fallback);
std::vector<std::int64_t> attr_ints(const OpNode& n, const std::string& key);
std::vector<std::int64_t> attr_ints(const OpNode& n, const std::string& key,
                                    const std::vector<std::int64_t>& fallback);
std::string attr_string(const OpNode& n, const std::string& key, const std::string& fallback);

}  // namespace ckpt
