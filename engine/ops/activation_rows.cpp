// Rows of silu and mish (activation.cpp): ONNX has no op for them (Mish: before opset 18), so
// the importer recovers them from the nodes the exporter writes (activation_patterns.cpp).
#include "engine/ops/activation.hpp"
#include "engine/ops/activation_patterns.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

constexpr char kSilu[] = "silu", kMish[] = "mish", kSiLUModule[] = "SiLU", kMishModule[] = "Mish";

template <const char* Type, Tensor (*F)(const Tensor&), const char* Class>
OpSchema activation(std::vector<OnnxPattern> patterns, std::vector<OnnxRule> onnx = {}) {
  return {.type = Type,
          .kernel = rows::unary<F>,
          .cost = rows::elementwise_cost,
          .python = rows::python_function<rows::kF, Type>,
          .python_module = rows::python_nn<Class>,
          .onnx = std::move(onnx),
          .onnx_patterns = std::move(patterns),
          .native_layers = {{.name = Type, .module_class = Class}}};
}

}  // namespace

void register_activation_ops(OpTable& t) {
  t.add(activation<kSilu, silu, kSiLUModule>(activation_patterns::silu()));
  // Mish is an ONNX op from opset 18.
  t.add(activation<kMish, mish, kMishModule>(activation_patterns::mish(),
                                             {{.op_type = "Mish",
                                               .since = 18,
                                               .translate = rows::onnx_unary<kMish>,
                                               .module_class = "Mish"}}));
}

}  // namespace ckpt
