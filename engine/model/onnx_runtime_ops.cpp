// ONNX ops on values computed at run time: each becomes one engine op (or a few).
#include <algorithm>
#include <set>

#include "engine/model/onnx_import.hpp"

namespace ckpt::onnx_import {

namespace {

using Ints = std::vector<std::int64_t>;

bool is_scalar(const Value* v) {
  return v && v->constant && v->probe.numel() == 1;
}

}  // namespace

void Importer::translate_runtime(const onnx::NodeProto& n, const Inputs& in) {
  const std::string& t = n.op_type();
  const std::string y = n.output_size() > 0 ? n.output(0) : std::string();
  auto x = [&]() -> const Value& { return input(n, in, 0, "first"); };
  auto rank = [&]() { return x().probe.dim(); };
  auto unavailable = [&](int k, const std::string& why) {
    if (n.output_size() > k && !n.output(k).empty())
      unavailable_[n.output(k)] =
          "uses output '" + n.output(k) + "' of node '" + n.name() + "' (" + t + "): " + why;
  };
  // 2-D window attributes: kernel, strides, symmetric pads, dilations.
  auto window = [&](const char* what) {
    const std::string auto_pad = attr_s(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID")
      fail(n, "auto_pad=" + auto_pad + " is not supported (give explicit pads)");
    Ints kernel = attr_ints(n, "kernel_shape");
    if (std::string(what) == "Conv" && kernel.empty()) {
      const Shape& w = input(n, in, 1, "weight").probe.shape();
      kernel.assign(w.begin() + 2, w.end());
    }
    if (kernel.size() != 2 || rank() != 4)
      fail(n, std::string(what) + " over " + std::to_string(kernel.size()) +
                  " spatial dimensions is not supported (2-D only, on [N, C, H, W])");
    Ints strides = attr_ints(n, "strides"), pads = attr_ints(n, "pads"),
         dilations = attr_ints(n, "dilations");
    if (strides.empty()) strides = {1, 1};
    if (dilations.empty()) dilations = {1, 1};
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
      fail(n, "asymmetric pads " + shape_str(pads) + " are not supported");
    return std::tuple<Ints, Ints, Ints, Ints>{kernel, strides, Ints{pads[0], pads[1]}, dilations};
  };

  static const std::map<std::string, std::string> unary{
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"}, {"Log", "log"},
      {"Sqrt", "sqrt"}, {"Erf", "erf"},         {"Neg", "neg"},   {"Sin", "sin"}, {"Cos", "cos"}};
  if (auto it = unary.find(t); it != unary.end()) {
    define(y, emit_op(n, it->second, {x().graph}, {}, y));
    return;
  }
  if (t == "Identity") {
    alias(y, x());
    return;
  }
  if (t == "Conv") {
    const auto [kernel, strides, pads, dilations] = window("Conv");
    define(y, emit_op(n, "conv2d", {x().graph, operand(n, 1, in), operand(n, 2, in)},
                      {{"stride", strides},
                       {"padding", pads},
                       {"dilation", dilations},
                       {"groups", attr_i(n, "group", 1)}},
                      y));
    return;
  }
  if (t == "BatchNormalization") {
    // Training mode: training_mode=1 from opset 14; below it, the extra outputs PyTorch's
    // training export asks for (running mean and variance, saved mean and variance).
    const bool training = opset_ >= 14 ? attr_i(n, "training_mode", 0) != 0 : n.output_size() > 1;
    std::vector<std::string> args;
    for (std::size_t i = 0; i < 5; ++i) args.push_back(operand(n, i, in));
    define(y, emit_op(n, "batch_norm", args,
                      {{"eps", attr_f(n, "epsilon", 1e-5)},
                       {"momentum", 1.0 - attr_f(n, "momentum", 0.9)},  // ONNX keeps the old share
                       {"training", std::int64_t{training ? 1 : 0}}},
                      y));
    for (int k = 1; k < n.output_size(); ++k)
      unavailable(k,
                  "the engine updates BatchNorm's running statistics in place and does not "
                  "expose them, or the batch statistics, as values");
    return;
  }
  if (t == "Clip") {
    Attributes a;
    if (in.size() > 1 && in[1]) a["min"] = constant_input(n, in, 1, "min").item();
    if (in.size() > 2 && in[2]) a["max"] = constant_input(n, in, 2, "max").item();
    if (a.size() == 2) {  // ReLU6 and Hardtanh export as Clip with both bounds
      define(y, emit_op(n, "hardtanh", {x().graph}, std::move(a), y));
    } else if (a.empty()) {
      alias(y, x());
    } else {
      define(y, emit_op(n, "clamp", {x().graph}, std::move(a), y));
    }
    return;
  }
  if (t == "MaxPool") {
    if (attr_i(n, "storage_order", 0) != 0) fail(n, "storage_order=1 is not supported");
    const auto [kernel, strides, pads, dilations] = window("MaxPool");
    define(y, emit_op(n, "max_pool2d", {x().graph},
                      {{"kernel", kernel},
                       {"stride", strides},
                       {"padding", pads},
                       {"dilation", dilations},
                       {"ceil_mode", attr_i(n, "ceil_mode", 0)}},
                      y));
    unavailable(1, "the engine's max_pool2d keeps its indices for backward only");
    return;
  }
  if (t == "Pad") {
    // What PyTorch exports before an AvgPool2d: zero padding, folded into the pooling below.
    if (attr_s(n, "mode", "constant") != "constant") fail(n, "only constant padding is supported");
    const auto pads = constant_input(n, in, 1, "pads").to_vector();
    const double value = in.size() > 2 && in[2] ? constant_input(n, in, 2, "value").item() : 0;
    if (std::all_of(pads.begin(), pads.end(), [](double p) { return p == 0; })) {
      alias(y, x());
      return;
    }
    const auto r = static_cast<std::size_t>(rank());
    bool spatial = value == 0 && pads.size() == 2 * r && r == 4;
    for (std::size_t d = 0; spatial && d < 2; ++d)
      spatial = pads[d] == 0 && pads[d + r] == 0 && pads[2 + d] == pads[2 + d + r];
    if (!spatial) fail(n, "only zero padding of H and W, followed by an AveragePool, is supported");
    pending_pads_[y] = {x().graph,
                        {static_cast<std::int64_t>(pads[2]), static_cast<std::int64_t>(pads[3])}};
    unavailable(0, "zero padding is supported only as the input of an AveragePool");
    return;
  }
  if (t == "AveragePool") {
    auto [kernel, strides, pads, dilations] = window("AveragePool");
    std::string source = x().graph;
    std::int64_t include_pad = attr_i(n, "count_include_pad", 0);
    if (auto p = pending_pads_.find(n.input(0)); p != pending_pads_.end()) {
      if (pads != Ints{0, 0}) fail(n, "pads on both the Pad and the AveragePool are not supported");
      source = p->second.first;
      pads = p->second.second;
      include_pad = 1;
    }
    define(y, emit_op(n, "avg_pool2d", {source},
                      {{"kernel", kernel},
                       {"stride", strides},
                       {"padding", pads},
                       {"ceil_mode", attr_i(n, "ceil_mode", 0)},
                       {"count_include_pad", include_pad}},
                      y));
    return;
  }
  if (t == "GlobalAveragePool") {
    if (rank() != 4) fail(n, "GlobalAveragePool is supported on [N, C, H, W] only");
    define(y, emit_op(n, "adaptive_avg_pool2d", {x().graph}, {{"output_size", Ints{1, 1}}}, y));
    return;
  }
  if (t == "Concat") {
    std::vector<std::string> args;
    for (std::size_t i = 0; i < in.size(); ++i) args.push_back(operand(n, i, in));
    define(y, emit_op(n, "cat", args, {{"dim", attr_i(n, "axis", 0)}}, y));
    return;
  }
  if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div") {
    const Value& a = input(n, in, 0, "first");
    const Value& b = input(n, in, 1, "second");
    std::string lower = t;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (is_scalar(&b) && !a.constant) {  // x op c: what PyTorch records for a Python scalar
      define(y, emit_op(n, lower + "_scalar", {a.graph}, {{"value", b.probe.item()}}, y));
      return;
    }
    if (is_scalar(&a) && !b.constant) {
      const double c = a.probe.item();
      if (t == "Add" || t == "Mul") {
        define(y, emit_op(n, lower + "_scalar", {b.graph}, {{"value", c}}, y));
      } else if (t == "Sub") {  // c - x
        const auto& neg = emit_op(n, "neg", {b.graph}, {});
        define(y, emit_op(n, "add_scalar", {neg.graph}, {{"value", c}}, y));
      } else {  // c / x
        const auto& inv = emit_op(n, "pow", {b.graph}, {{"exponent", -1.0}});
        define(y, emit_op(n, "mul_scalar", {inv.graph}, {{"value", c}}, y));
      }
      return;
    }
    define(y, emit_op(n, lower, {operand(n, 0, in), operand(n, 1, in)}, {}, y));
    return;
  }
  if (t == "Pow") {
    if (!is_scalar(in.size() > 1 ? in[1] : nullptr))
      fail(n, "Pow with an exponent that is not one known number is not supported");
    define(y, emit_op(n, "pow", {x().graph}, {{"exponent", in[1]->probe.item()}}, y));
    return;
  }
  if (t == "ReduceMean" || t == "ReduceSum") {
    Ints axes = attr_ints(n, "axes");
    if (t == "ReduceSum" && opset_ >= 13 && in.size() > 1 && in[1]) {
      const auto a = constant_input(n, in, 1, "axes").to_vector();
      axes.assign(a.begin(), a.end());
    }
    const std::int64_t keep = attr_i(n, "keepdims", 1);
    if (axes.empty()) {
      if (t == "ReduceSum" && attr_i(n, "noop_with_empty_axes", 0)) {
        alias(y, x());
        return;
      }
      for (std::int64_t d = 0; d < rank(); ++d) axes.push_back(d);
    }
    const std::string op = t == "ReduceMean" ? "mean_dims" : "sum_dims";
    define(y, emit_op(n, op, {x().graph}, {{"dims", axes}, {"keepdim", keep}}, y));
    return;
  }
  if (t == "LayerNormalization") {
    const std::int64_t axis = wrap_dim(attr_i(n, "axis", -1), rank(), "LayerNormalization");
    const Shape& s = x().probe.shape();
    const Ints normalized(s.begin() + axis, s.end());
    define(y, emit_op(n, "layer_norm", {x().graph, operand(n, 1, in), operand(n, 2, in)},
                      {{"normalized_shape", normalized}, {"eps", attr_f(n, "epsilon", 1e-5)}}, y));
    unavailable(1, "the engine keeps LayerNorm's mean for backward only");
    unavailable(2, "the engine keeps LayerNorm's inverse std for backward only");
    return;
  }
  if (t == "Gemm") {
    const std::int64_t ta = attr_i(n, "transA", 0), tb = attr_i(n, "transB", 0);
    const double alpha = attr_f(n, "alpha", 1.0), beta = attr_f(n, "beta", 1.0);
    const bool has_c = in.size() > 2 && in[2];
    // PyTorch's nn.Linear: Gemm(x, W, b) with transB=1. Anything else: matmul and add.
    if (!ta && tb && alpha == 1.0 && (!has_c || (beta == 1.0 && in[2]->probe.dim() == 1))) {
      define(y, emit_op(n, "linear", {x().graph, operand(n, 1, in), operand(n, 2, in)}, {}, y));
      return;
    }
    std::string a = operand(n, 0, in), b = operand(n, 1, in);
    if (ta)
      a = emit_op(n, "transpose", {a}, {{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{1}}})
              .graph;
    if (tb)
      b = emit_op(n, "transpose", {b}, {{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{1}}})
              .graph;
    std::string prod = emit_op(n, "matmul", {a, b}, {}, has_c || alpha != 1.0 ? "" : y).graph;
    if (alpha != 1.0)
      prod = emit_op(n, "mul_scalar", {prod}, {{"value", alpha}}, has_c ? "" : y).graph;
    if (has_c) {
      std::string c = operand(n, 2, in);
      if (beta != 1.0) c = emit_op(n, "mul_scalar", {c}, {{"value", beta}}).graph;
      prod = emit_op(n, "add", {prod, c}, {}, y).graph;
    }
    define(y, values_.at(prod));
    return;
  }
  if (t == "MatMul") {
    define(y, emit_op(n, "matmul", {operand(n, 0, in), operand(n, 1, in)}, {}, y));
    return;
  }
  if (t == "Flatten") {
    // axis is in [-rank, rank]; a negative one counts from the end.
    std::int64_t axis = attr_i(n, "axis", 1);
    if (axis < 0) axis += rank();
    if (axis < 0 || axis > rank())
      fail(n, "axis " + std::to_string(attr_i(n, "axis", 1)) + " is out of range for rank " +
                  std::to_string(rank()));
    if (axis == 1 && rank() >= 2) {
      define(y, emit_op(n, "flatten", {x().graph},
                        {{"start_dim", std::int64_t{1}}, {"end_dim", std::int64_t{-1}}}, y));
      return;
    }
    const Shape& s = x().probe.shape();
    std::int64_t outer = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
    define(y, emit_op(n, "reshape", {x().graph},
                      {{"shape", Ints{outer, outer ? x().probe.numel() / outer : 0}}}, y));
    return;
  }
  if (t == "Reshape") {
    const auto target = constant_input(n, in, 1, "shape").to_vector();
    Ints shape(target.begin(), target.end());
    if (attr_i(n, "allowzero", 0) && std::count(shape.begin(), shape.end(), 0))
      fail(n, "allowzero=1 with a 0 in the shape is not supported");
    define(y, emit_op(n, "reshape", {x().graph}, {{"shape", shape}}, y));
    return;
  }
  if (t == "Transpose") {
    Ints perm = attr_ints(n, "perm");
    if (perm.empty())
      for (std::int64_t d = rank() - 1; d >= 0; --d) perm.push_back(d);
    define(y, emit_op(n, "permute", {x().graph}, {{"dims", perm}}, y));
    return;
  }
  if (t == "Softmax" || t == "LogSoftmax") {
    const std::string op = t == "Softmax" ? "softmax" : "log_softmax";
    const std::int64_t axis = wrap_dim(attr_i(n, "axis", opset_ >= 13 ? -1 : 1), rank(), t.c_str());
    if (opset_ >= 13 || axis == rank() - 1) {
      define(y, emit_op(n, op, {x().graph}, {{"dim", axis}}, y));
      return;
    }
    // Below opset 13 the input is seen as 2-D, [prod(dims before axis), prod(the rest)].
    const Shape& s = x().probe.shape();
    std::int64_t outer = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
    const auto& flat = emit_op(n, "reshape", {x().graph}, {{"shape", Ints{outer, -1}}});
    const auto& soft = emit_op(n, op, {flat.graph}, {{"dim", std::int64_t{1}}});
    define(y, emit_op(n, "reshape", {soft.graph}, {{"shape", Ints(s.begin(), s.end())}}, y));
    return;
  }
  if (t == "Dropout") {
    double ratio = 0.5;
    bool training = false;
    if (in.size() > 1 && in[1]) ratio = constant_input(n, in, 1, "ratio").item();
    if (in.size() > 2 && in[2]) training = constant_input(n, in, 2, "training_mode").item() != 0;
    unavailable(1, "the engine's dropout keeps its mask for backward only");
    if (!training || ratio == 0) {
      alias(y, x());
      return;
    }
    define(y, emit_op(n, "dropout", {x().graph}, {{"p", ratio}, {"training", std::int64_t{1}}}, y));
    return;
  }
  if (t == "Unsqueeze" || t == "Squeeze") {
    Ints axes = attr_ints(n, "axes");
    if (opset_ >= 13 && in.size() > 1 && in[1]) {
      const auto a = constant_input(n, in, 1, "axes").to_vector();
      axes.assign(a.begin(), a.end());
    }
    std::string cur = x().graph;
    if (t == "Unsqueeze") {
      const std::int64_t out_rank = rank() + static_cast<std::int64_t>(axes.size());
      for (auto& a : axes) a = wrap_dim(a, out_rank, "Unsqueeze");
      std::sort(axes.begin(), axes.end());
    } else {
      if (axes.empty())
        for (std::int64_t d = 0; d < rank(); ++d)
          if (x().probe.shape()[static_cast<std::size_t>(d)] == 1) axes.push_back(d);
      for (auto& a : axes) a = wrap_dim(a, rank(), "Squeeze");
      std::sort(axes.rbegin(), axes.rend());
    }
    if (axes.empty()) {
      alias(y, x());
      return;
    }
    for (std::size_t i = 0; i < axes.size(); ++i)
      cur = emit_op(n, t == "Unsqueeze" ? "unsqueeze" : "squeeze", {cur}, {{"dim", axes[i]}},
                    i + 1 == axes.size() ? y : "")
                .graph;
    define(y, values_.at(cur));
    return;
  }
  if (t == "Cast") {
    const auto to = attr_i(n, "to", 1);
    const DType d = x().probe.dtype();
    const bool same = (to == onnx::TensorProto_DataType_FLOAT && d == DType::f32) ||
                      (to == onnx::TensorProto_DataType_DOUBLE && d == DType::f64) ||
                      (to == onnx::TensorProto_DataType_INT64 && d == DType::i64);
    if (!same) fail(n, "a Cast of a value computed at run time to another type is not supported");
    alias(y, x());
    return;
  }
  if (t == "Gather") {
    const Value& data = x();
    const Value& idx = input(n, in, 1, "indices");
    const std::int64_t axis = wrap_dim(attr_i(n, "axis", 0), rank(), "Gather");
    if (idx.constant && idx.probe.dim() == 0) {
      define(y,
             emit_op(n, "select", {data.graph},
                     {{"dim", axis}, {"index", static_cast<std::int64_t>(idx.probe.item())}}, y));
      return;
    }
    if (axis == 0 && data.probe.dim() == 2 && idx.probe.dtype() == DType::i64) {
      define(y, emit_op(n, "embedding", {data.graph, operand(n, 1, in)}, {}, y));
      return;
    }
    fail(n,
         "Gather is supported on a computed value with one known index, or as an embedding "
         "(axis 0 of a 2-D table)");
  }
  if (t == "Slice") {
    const auto starts = constant_input(n, in, 1, "starts").to_vector();
    const auto ends = constant_input(n, in, 2, "ends").to_vector();
    std::vector<double> axes, steps;
    if (in.size() > 3 && in[3]) axes = constant_input(n, in, 3, "axes").to_vector();
    if (in.size() > 4 && in[4]) steps = constant_input(n, in, 4, "steps").to_vector();
    std::string cur = x().graph;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const std::int64_t axis =
          wrap_dim(axes.empty() ? static_cast<std::int64_t>(i) : static_cast<std::int64_t>(axes[i]),
                   rank(), "Slice");
      const std::int64_t step = steps.empty() ? 1 : static_cast<std::int64_t>(steps[i]);
      if (step <= 0) fail(n, "a non-positive slice step is not supported");
      const std::int64_t size = x().probe.shape()[static_cast<std::size_t>(axis)];
      auto bound = [&](double v) {
        std::int64_t b = v >= 9.2e18 ? size : v <= -9.2e18 ? 0 : static_cast<std::int64_t>(v);
        if (b < 0) b += size;
        return std::clamp<std::int64_t>(b, 0, size);
      };
      cur =
          emit_op(
              n, "slice", {cur},
              {{"dim", axis}, {"start", bound(starts[i])}, {"end", bound(ends[i])}, {"step", step}},
              i + 1 == starts.size() ? y : "")
              .graph;
    }
    define(y, values_.at(cur));
    return;
  }
  fail(n, "op type '" + t + "' needs its inputs to be known at load time here");
}

}  // namespace ckpt::onnx_import
