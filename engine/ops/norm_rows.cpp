// Rows of batch_norm and layer_norm (norm.cpp).
#include <algorithm>

#include "engine/ops/group_norm.hpp"
#include "engine/ops/norm.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

TensorList run_batch_norm(const OpCall& n, const TensorList& x) {
  return {batch_norm(x[0], optional_input(x, 1), optional_input(x, 2), optional_input(x, 3),
                     optional_input(x, 4), attr_int(n, "training", 1) != 0,
                     attr_double(n, "momentum", 0.1), attr_double(n, "eps", 1e-5),
                     optional_input(x, 5))};
}
TensorList run_layer_norm(const OpCall& n, const TensorList& x) {
  return {layer_norm(x[0], attr_ints(n, "normalized_shape"), optional_input(x, 1),
                     optional_input(x, 2), attr_double(n, "eps", 1e-5))};
}

std::string python_batch_norm(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  const auto opt = [&](std::size_t i) { return rows::arg_or_none(a, i); };
  return "F.batch_norm(" + rows::arg(a, 0) + ", " + opt(3) + ", " + opt(4) + ", " + opt(1) + ", " +
         opt(2) + ", training=True, momentum=" + rows::number(attr_double(op, "momentum", 0.1)) +
         ", eps=" + rows::number(attr_double(op, "eps", 1e-5)) + ")";
}
std::string module_batch_norm(const OpCall& op, const std::vector<Shape>& params) {
  if (params.size() < 2 || params[1].size() != 1) return "";
  std::string s = "nn.BatchNorm2d(" + std::to_string(params[1][0]);
  const double eps = attr_double(op, "eps", 1e-5), momentum = attr_double(op, "momentum", 0.1);
  if (eps != 1e-5) s += ", eps=" + rows::number(eps);
  if (momentum != 0.1) s += ", momentum=" + rows::number(momentum);
  return s + ")";
}
std::string python_layer_norm(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return "F.layer_norm(" + rows::arg(a, 0) + ", " + rows::ints(attr_ints(op, "normalized_shape")) +
         ", " + rows::arg_or_none(a, 1) + ", " + rows::arg_or_none(a, 2) +
         ", eps=" + rows::number(attr_double(op, "eps", 1e-5)) + ")";
}
std::string module_layer_norm(const OpCall& op, const std::vector<Shape>& params) {
  if (params.size() < 2 || params[1].empty()) return "";
  const double eps = attr_double(op, "eps", 1e-5);
  return "nn.LayerNorm(" + rows::ints(attr_ints(op, "normalized_shape")) +
         (eps != 1e-5 ? ", eps=" + rows::number(eps) : "") + ")";
}

// Training mode: training_mode=1 from opset 14; below it, the extra outputs PyTorch's training
// export asks for (running mean and variance, saved mean and variance).
void onnx_batch_norm(OnnxNode& n) {
  // The inference form (one output; training_mode 0 from opset 14), which the torch.export-based
  // exporter writes whatever the module's mode, runs as a training step does: with the batch's
  // statistics, updating the running ones. A training step is what the engine measures.
  const bool training = n.opset() >= 14 ? n.attr_i("training_mode", 0) != 0 : n.output_count() > 1;
  if (!training)
    n.note_change(
        "BatchNormalization in inference form runs in training mode (batch statistics, running "
        "ones updated), as the training step the engine measures does");
  std::vector<std::string> args;
  for (std::size_t i = 0; i < 5; ++i) args.push_back(n.operand(i));
  n.define(n.y(), n.emit_op("batch_norm", args,
                            {{"eps", n.attr_f("epsilon", 1e-5)},
                             {"momentum", 1.0 - n.attr_f("momentum", 0.9)},  // ONNX: the old share
                             {"training", std::int64_t{1}}},
                            n.y()));
  for (int k = 1; k < n.output_count(); ++k)
    n.unavailable(k,
                  "the engine updates BatchNorm's running statistics in place and does not "
                  "expose them, or the batch statistics, as values");
}

void onnx_layer_norm(OnnxNode& n) {
  const OnnxValue& x = n.input(0, "first");
  const std::int64_t axis = wrap_dim(n.attr_i("axis", -1), n.rank(), "LayerNormalization");
  const Shape& s = x.probe.shape();
  const std::vector<std::int64_t> normalized(s.begin() + axis, s.end());
  n.define(n.y(), n.emit_op("layer_norm", {x.graph, n.operand(1), n.operand(2)},
                            {{"normalized_shape", normalized}, {"eps", n.attr_f("epsilon", 1e-5)}},
                            n.y()));
  n.unavailable(1, "the engine keeps LayerNorm's mean for backward only");
  n.unavailable(2, "the engine keeps LayerNorm's inverse std for backward only");
}

// {"type": "batchnorm2d", "features", "eps", "momentum"}: nn.BatchNorm2d in training mode, with
// its running statistics and num_batches_tracked as buffers.
ValueNames layer_batchnorm2d(NativeLayerCall& c) {
  const std::int64_t n = c.get_int("features");
  if (n <= 0) c.fail("\"features\" must be positive");
  auto buffer = [&](const char* name, const Shape& shape, std::function<Tensor()> make) {
    return c.param(name, shape, make, false, true);
  };
  ValueNames args{c.one()[0],
                  c.param("weight", {n}, [&] { return Tensor::ones({n}); }),
                  c.param("bias", {n}, [&] { return Tensor::zeros({n}); }),
                  buffer("running_mean", {n}, [&] { return Tensor::zeros({n}); }),
                  buffer("running_var", {n}, [&] { return Tensor::ones({n}); }),
                  buffer("num_batches_tracked", {}, [] { return Tensor::zeros({}, DType::i64); })};
  Attributes a{{"eps", c.get_double("eps", 1e-5)},
               {"momentum", c.get_double("momentum", 0.1)},
               {"training", std::int64_t{1}}};
  return c.emit_op("batch_norm", args, std::move(a));
}

// The decomposition's axes (ReduceMean's attribute below opset 18), as trailing dims of x.
bool emit_layer_norm(OnnxFusion& f) {
  const OnnxValue* x = f.value("x");
  const auto eps = f.scalar("eps");
  if (!x || x->constant || !eps || f.attr_i("mean", "keepdims", 1) != 1 ||
      f.attr_i("variance", "keepdims", 1) != 1)
    return false;
  const std::int64_t rank = x->probe.dim();
  auto axes = f.attr_ints("mean", "axes");
  auto var_axes = f.attr_ints("variance", "axes");
  for (auto* list : {&axes, &var_axes}) {
    for (auto& a : *list) a = a < 0 ? a + rank : a;
    std::sort(list->begin(), list->end());
  }
  if (axes.empty() || axes != var_axes) return false;
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<std::int64_t>(axes.size() - i)) return false;
  const Shape& s = x->probe.shape();
  const Shape normalized(s.end() - static_cast<std::ptrdiff_t>(axes.size()), s.end());
  std::vector<std::string> inputs{f.operand("x")};
  for (const char* p : {"weight", "bias"}) {
    const OnnxValue* v = f.value(p);
    if (!v) break;
    if (v->probe.shape() != normalized) return false;
    inputs.push_back(f.operand(p));
  }
  f.emit_op("layer_norm", inputs, {{"normalized_shape", normalized}, {"eps", *eps}});
  return true;
}

// {"type": "layernorm", "shape", "eps"}: nn.LayerNorm(shape).
ValueNames layer_layernorm(NativeLayerCall& c) {
  const Shape shape = c.get_int_list("shape");
  ValueNames args{c.one()[0], c.param("weight", shape, [&] { return Tensor::ones(shape); }),
                  c.param("bias", shape, [&] { return Tensor::zeros(shape); })};
  Attributes a{{"normalized_shape", shape}, {"eps", c.get_double("eps", 1e-5)}};
  return c.emit_op("layer_norm", args, std::move(a));
}

// LayerNorm below opset 17, as PyTorch exports it: (x - mean) / sqrt(mean((x - mean)^2) + eps),
// then · weight, + bias (either may be absent). The two ReduceMeans are over the same trailing
// axes, which are the normalized shape. From opset 17 the exporter writes LayerNormalization:
// the same nodes there are a module's own arithmetic, which PyTorch runs decomposed.
std::vector<OnnxPattern> layer_norm_patterns() {
  using namespace pattern;
  const P x = any("x");
  const P d = as("centered", op("Sub", {x, as("mean", op("ReduceMean", {x}))}));
  const P var = as("variance", op("ReduceMean", {op("Pow", {d, number(2)})}));
  const P normed = op("Div", {d, op("Sqrt", {commutative("Add", var, constant("eps"))})});
  const P scaled = commutative("Mul", normed, any("weight"));
  return {{.name = "LayerNorm (decomposed)",
           .root = commutative("Add", scaled, any("bias")),
           .until = 16,
           .module_class = "LayerNorm",
           .fuse = emit_layer_norm},
          {.name = "LayerNorm without bias (decomposed)",
           .root = scaled,
           .until = 16,
           .module_class = "LayerNorm",
           .fuse = emit_layer_norm},
          {.name = "LayerNorm without affine (decomposed)",
           .root = normed,
           .until = 16,
           .module_class = "LayerNorm",
           .fuse = emit_layer_norm}};
}

// Training mode saves the batch statistics (saved[4], the batch mean): then the running ones
// were updated.
bool batch_norm_updated_buffers(const TensorList& saved) {
  return saved.size() > 4 && saved[4].defined();
}

}  // namespace

void register_norm_ops(OpTable& t) {
  t.add(
      {.type = "batch_norm",
       .min_inputs = 1,
       .max_inputs = 6,
       .kernel = run_batch_norm,
       .cost = rows::elementwise_cost,
       .python = python_batch_norm,
       .python_module = module_batch_norm,
       .onnx = {{.op_type = "BatchNormalization",
                 .translate = onnx_batch_norm,
                 .module_class = "BatchNorm2d",
                 .buffer_inputs = {3, 4},
                 .parameter_init = {InitKind::by_shape, InitKind::ones, InitKind::zeros,
                                    InitKind::zeros, InitKind::ones}}},
       .native_layers = {{.name = "batchnorm2d",
                          .module_class = "BatchNorm2d",
                          .parameters = true,
                          .build = layer_batchnorm2d}},
       .parameter_names = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"},
       .updates_buffers = batch_norm_updated_buffers});
  t.add({.type = "layer_norm",
         .min_inputs = 1,
         .max_inputs = 3,
         .kernel = run_layer_norm,
         .cost = rows::elementwise_cost,
         .python = python_layer_norm,
         .python_module = module_layer_norm,
         .onnx = {{.op_type = "LayerNormalization",
                   .translate = onnx_layer_norm,
                   .module_class = "LayerNorm",
                   .parameter_init = {InitKind::by_shape, InitKind::ones, InitKind::zeros}}},
         .onnx_patterns = layer_norm_patterns(),
         .native_layers = {{.name = "layernorm",
                            .module_class = "LayerNorm",
                            .parameters = true,
                            .build = layer_layernorm}},
         .parameter_names = {"weight", "bias"},
         .autocast = {.cuda = AutocastPolicy::fp32}});
  register_group_norm_ops(t);
}

}  // namespace ckpt
