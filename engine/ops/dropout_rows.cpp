// Rows of dropout (dropout.cpp).
#include "engine/ops/dropout.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

// The generator is the run's (Generator::current()), so a checkpoint can stash its state.
TensorList run_dropout(const OpCall& n, const TensorList& x) {
  return {dropout(x[0], attr_double(n, "p", 0.5), attr_int(n, "training", 1) != 0)};
}

std::string python_dropout(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return "F.dropout(" + rows::arg(a, 0) + ", p=" + rows::number(attr_double(op, "p", 0.5)) +
         ", training=" + (attr_int(op, "training", 1) ? "True" : "False") + ")";
}
std::string module_dropout(const OpCall& op, const std::vector<Shape>&) {
  return "nn.Dropout(p=" + rows::number(attr_double(op, "p", 0.5)) + ")";
}

void onnx_dropout(OnnxNode& n) {
  const double ratio = n.has_input(1) ? n.constant_input(1, "ratio").item() : 0.5;
  const bool training = n.has_input(2) && n.constant_input(2, "training_mode").item() != 0;
  n.unavailable(1, "the engine's dropout keeps its mask for backward only");
  const OnnxValue& x = n.input(0, "first");
  if (!training || ratio == 0) return n.alias(n.y(), x);
  n.define(n.y(),
           n.emit_op("dropout", {x.graph}, {{"p", ratio}, {"training", std::int64_t{1}}}, n.y()));
}

// {"type": "dropout", "p"}: nn.Dropout in training mode.
ValueNames layer_dropout(NativeLayerCall& c) {
  const double p = c.get_double("p", 0.5);
  if (p < 0 || p > 1) c.fail("dropout \"p\" must be in [0, 1]");
  return c.emit_op("dropout", c.one(), {{"p", p}, {"training", std::int64_t{1}}});
}

}  // namespace

void register_dropout_ops(OpTable& t) {
  t.add(
      {.type = "dropout",
       .kernel = run_dropout,
       .cost = rows::elementwise_cost,
       .python = python_dropout,
       .python_module = module_dropout,
       .onnx = {{.op_type = "Dropout", .translate = onnx_dropout, .module_class = "Dropout"}},
       .native_layers = {{.name = "dropout", .module_class = "Dropout", .build = layer_dropout}}});
}

}  // namespace ckpt
