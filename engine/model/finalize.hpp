#pragma once

#include "engine/model/model.hpp"

namespace ckpt {

// Completes a model that a loader has built (ops, values' producers, module tree, parameters,
// inputs): checks that every value is made once before it is used and that every op kind
// exists, computes each module's op range, inputs, outputs, parameters and whether it is
// checkpointable, runs the model once without autograd to record every value's shape, and
// builds the lookups. Errors are std::invalid_argument naming model.source and the node.
void finalize_model(Model& model);

// The shape of input `in` for a batch size (dims of -1 take the batch, -k k times the batch).
Shape resolve_input_shape(const InputInfo& in, std::int64_t batch);

}  // namespace ckpt
