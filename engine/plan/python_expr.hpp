#pragma once

// Python spellings of values and of the engine's op kinds, for pytorch_code. An op's spelling
// is its row's (OpSchema::python and python_module, engine/ops/*_rows.cpp); the value
// spellings the rows share live with them (engine/ops/schema/row_helpers.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt::py {

std::string ident(const std::string& s);  // a valid Python identifier close to s
using rows::ints;                         // "(1, 2)", "(3,)"
using rows::number;                       // shortest round-trip spelling, "1.0" for integers
std::string camel(const std::string& s);  // "heavy_function" -> "HeavyFunction"
std::string quote(const std::string& s);  // a Python string literal

// The expression computing `op` from already-spelled arguments (one per op input, "" for an
// absent optional input). `shape` is the first input's shape (for negative dims, slicing).
std::string op_expression(const OpNode& op, const std::vector<std::string>& args,
                          const Shape& shape);

// The torch.nn constructor of a single-op module of a standard kind ("nn.Linear(4, 8)"), or
// "" when the op has no module counterpart. `params` are the op's parameter shapes by input
// position (empty where the input is not a parameter).
std::string leaf_module(const OpNode& op, const std::vector<Shape>& params);

// The torch.optim constructor of the optimizer a run ends with, over `parameters`
// ("torch.optim.AdamW(model.parameters(), lr=0.001, ...)"), with every hyperparameter the
// engine's step used spelled out; "" for none.
std::string optimizer_constructor(const OptimizerSettings& settings, const std::string& parameters);

}  // namespace ckpt::py
