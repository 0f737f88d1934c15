#pragma once

// The op kinds a Model can contain (OpNode::op_type) and how each one runs: the bridge from a
// graph node (inputs by position, attributes by name) to an engine op call. Both loaders emit
// these kinds, the Runner executes them, and load-time shape inference runs them once.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/model/model.hpp"

namespace ckpt {

using OpKernel = TensorList (*)(const OpNode& node, const TensorList& inputs);

struct OpKind {
  const char* type;
  int min_inputs;
  int max_inputs;  // -1: any number (cat)
  OpKernel run;
};

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

// "float32[2, 3], int64[4]" for messages.
std::string describe_tensors(const TensorList& ts);

}  // namespace ckpt
