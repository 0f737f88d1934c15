#pragma once

// A contiguous range of sibling modules checkpointed as one segment, as one segment of
// checkpoint_sequential is, or as DenseNet's memory_efficient bn_function (concat + norm1 +
// relu1 + conv1) is: a function over ops that no single module scope holds.

#include <string>
#include <utility>
#include <vector>

#include "engine/model/model.hpp"

namespace ckpt {

// The label a range has in traces, the CLI and JSON: "first..last".
std::string range_label(const std::string& first, const std::string& last);

// Builds the range from `first` to `last`, each a module instance path or the name of an op
// that runs directly in the common parent module. Both must share that parent, `first` must run
// no later than `last`, and every op between them must belong to the parent. The result is a
// Module (path = range_label, kind "Range") whose inputs are the values made before the range
// and used inside, and whose outputs are the values made inside and used after it. Throws
// std::invalid_argument naming the model, the endpoints and the problem.
Module make_range(const Model& model, const std::string& first, const std::string& last);

// Parses "A..B" (the CLI's --checkpoint-range); throws std::invalid_argument when malformed.
std::pair<std::string, std::string> parse_range(const std::string& text);

}  // namespace ckpt
