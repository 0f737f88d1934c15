// Rows of silu, mish and glu (activation.cpp): ONNX has no op for them (Mish: before opset 18), so
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

TensorList run_glu(const OpCall& op, const TensorList& x) {
  return {glu(x[0], attr_int(op, "dim", -1))};
}

std::string python_glu(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return "F.glu(" + rows::arg(a, 0) + ", dim=" + std::to_string(attr_int(op, "dim", -1)) + ")";
}

ValueNames layer_glu(NativeLayerCall& c) {
  return c.emit_op("glu", c.one(), {{"dim", c.get_int("dim", -1)}});
}

std::string python_glu_module(const OpCall& op, const std::vector<Shape>&) {
  return "nn.GLU(dim=" + std::to_string(attr_int(op, "dim", -1)) + ")";
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
  // {"type": "glu", "dim": d} (nn.GLU's default -1).
  t.add({.type = "glu",
         .kernel = run_glu,
         .cost = rows::elementwise_cost,
         .python = python_glu,
         .python_module = python_glu_module,
         .onnx_patterns = activation_patterns::glu(),
         .native_layers = {{.name = "glu", .module_class = "GLU", .build = layer_glu}}});
}

}  // namespace ckpt
