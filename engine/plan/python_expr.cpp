#include "engine/plan/python_expr.hpp"

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <set>
#include <stdexcept>

#include "engine/model/op_registry.hpp"

namespace ckpt::py {

std::string ident(const std::string& s) {
  static const std::set<std::string> reserved{"False",
                                              "None",
                                              "True",
                                              "and",
                                              "as",
                                              "assert",
                                              "async",
                                              "await",
                                              "break",
                                              "class",
                                              "continue",
                                              "def",
                                              "del",
                                              "elif",
                                              "else",
                                              "except",
                                              "finally",
                                              "for",
                                              "from",
                                              "global",
                                              "if",
                                              "import",
                                              "in",
                                              "is",
                                              "lambda",
                                              "nonlocal",
                                              "not",
                                              "or",
                                              "pass",
                                              "raise",
                                              "return",
                                              "try",
                                              "while",
                                              "with",
                                              "yield",
                                              "self",
                                              "torch",
                                              "nn",
                                              "F",
                                              "checkpoint",
                                              "checkpoint_sequential",
                                              "model",
                                              "loss",
                                              "inputs"};
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  if (reserved.count(out)) out += "_";
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "-float('inf')";
  if (std::isnan(v)) return "float('nan')";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string ints(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string camel(const std::string& s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "M" + out;
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

namespace {

// A pair attribute spelled as PyTorch accepts it: "2" when both are equal, else "(2, 3)".
std::string pair(const std::vector<std::int64_t>& v) {
  if (v.size() == 2 && v[0] == v[1]) return std::to_string(v[0]);
  return ints(v);
}

std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// x[:, :, a:b:s] for a slice on `dim`.
std::string index_expr(const std::string& x, std::int64_t dim, const std::string& item) {
  std::string s = x + "[";
  for (std::int64_t d = 0; d < dim; ++d) s += ":, ";
  return s + item + "]";
}

std::int64_t wrap(std::int64_t d, const Shape& shape) {
  const auto n = static_cast<std::int64_t>(shape.size());
  return d < 0 && n > 0 ? d + n : d;
}

}  // namespace

std::string op_expression(const OpNode& op, const std::vector<std::string>& a, const Shape& shape) {
  const std::string& t = op.op_type;
  auto arg = [&](std::size_t i) { return i < a.size() ? a[i] : std::string(); };
  auto opt = [&](std::size_t i) { return arg(i).empty() ? std::string("None") : arg(i); };
  if (const OpSchema* row = OpTable::instance().find(t); row && row->python)
    return row->python(op_call(op), a, shape);
  static const std::set<std::string> torch_unary{"exp", "log",  "sqrt",    "sin",
                                                 "cos", "tanh", "sigmoid", "erf"};
  if (torch_unary.count(t)) return "torch." + t + "(" + arg(0) + ")";
  if (t == "relu" || t == "gelu") return "F." + t + "(" + arg(0) + ")";
  if (t == "add") return arg(0) + " + " + arg(1);
  if (t == "sub") return arg(0) + " - " + arg(1);
  if (t == "mul") return arg(0) + " * " + arg(1);
  if (t == "div") return arg(0) + " / " + arg(1);
  if (t == "matmul") return arg(0) + " @ " + arg(1);
  if (t == "add_scalar") return arg(0) + " + " + number(attr_double(op, "value"));
  if (t == "sub_scalar") return arg(0) + " - " + number(attr_double(op, "value"));
  if (t == "mul_scalar") return arg(0) + " * " + number(attr_double(op, "value"));
  if (t == "div_scalar") return arg(0) + " / " + number(attr_double(op, "value"));
  if (t == "neg") return "-" + arg(0);
  if (t == "pow") return arg(0) + " ** " + number(attr_double(op, "exponent"));
  if (t == "linear")
    return "F.linear(" + arg(0) + ", " + arg(1) + (arg(2).empty() ? "" : ", " + arg(2)) + ")";
  if (t == "sum" || t == "mean") return arg(0) + "." + t + "()";
  if (t == "sum_dims" || t == "mean_dims")
    return arg(0) + "." + t.substr(0, t.find('_')) + "(dim=" + ints(attr_ints(op, "dims")) +
           (attr_int(op, "keepdim", 0) ? ", keepdim=True" : "") + ")";
  if (t == "view" || t == "reshape") {
    // A 0 keeps the input's dimension (the ONNX convention our graphs use).
    std::vector<std::string> dims;
    const auto target = attr_ints(op, "shape");
    for (std::size_t i = 0; i < target.size(); ++i)
      dims.push_back(target[i] == 0 ? arg(0) + ".shape[" + std::to_string(i) + "]"
                                    : std::to_string(target[i]));
    return arg(0) + "." + t + "(" + join(dims) + ")";
  }
  if (t == "flatten")
    return "torch.flatten(" + arg(0) + ", " + std::to_string(attr_int(op, "start_dim", 1)) +
           (attr_int(op, "end_dim", -1) == -1 ? ""
                                              : ", " + std::to_string(attr_int(op, "end_dim"))) +
           ")";
  if (t == "transpose")
    return arg(0) + ".transpose(" + std::to_string(attr_int(op, "dim0")) + ", " +
           std::to_string(attr_int(op, "dim1")) + ")";
  if (t == "permute") return arg(0) + ".permute" + ints(attr_ints(op, "dims"));
  if (t == "select")
    return index_expr(arg(0), wrap(attr_int(op, "dim"), shape),
                      std::to_string(attr_int(op, "index")));
  if (t == "slice") {
    const std::int64_t start = attr_int(op, "start", 0), end = attr_int(op, "end", INT64_MAX),
                       step = attr_int(op, "step", 1);
    std::string item = (start ? std::to_string(start) : "") + ":" +
                       (end == INT64_MAX ? "" : std::to_string(end)) +
                       (step == 1 ? "" : ":" + std::to_string(step));
    return index_expr(arg(0), wrap(attr_int(op, "dim"), shape), item);
  }
  if (t == "unsqueeze" || t == "squeeze")
    return arg(0) + "." + t + "(" + std::to_string(attr_int(op, "dim")) + ")";
  if (t == "expand") return arg(0) + ".expand" + ints(attr_ints(op, "shape"));
  if (t == "clone" || t == "contiguous") return arg(0) + "." + t + "()";
  if (t == "identity") return arg(0);
  if (t == "cat")
    return "torch.cat([" + join(a) + "], dim=" + std::to_string(attr_int(op, "dim", 0)) + ")";
  if (t == "conv2d")
    return "F.conv2d(" + arg(0) + ", " + arg(1) + ", " + opt(2) +
           ", stride=" + pair(attr_ints(op, "stride", {1, 1})) +
           ", padding=" + pair(attr_ints(op, "padding", {0, 0})) +
           ", dilation=" + pair(attr_ints(op, "dilation", {1, 1})) +
           ", groups=" + std::to_string(attr_int(op, "groups", 1)) + ")";
  if (t == "batch_norm")
    return "F.batch_norm(" + arg(0) + ", " + opt(3) + ", " + opt(4) + ", " + opt(1) + ", " +
           opt(2) + ", training=True, momentum=" + number(attr_double(op, "momentum", 0.1)) +
           ", eps=" + number(attr_double(op, "eps", 1e-5)) + ")";
  if (t == "layer_norm")
    return "F.layer_norm(" + arg(0) + ", " + ints(attr_ints(op, "normalized_shape")) + ", " +
           opt(1) + ", " + opt(2) + ", eps=" + number(attr_double(op, "eps", 1e-5)) + ")";
  if (t == "max_pool2d")
    return "F.max_pool2d(" + arg(0) + ", " + pair(attr_ints(op, "kernel")) + ", " +
           pair(attr_ints(op, "stride")) + ", " + pair(attr_ints(op, "padding", {0, 0})) + ", " +
           pair(attr_ints(op, "dilation", {1, 1})) +
           (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") + ")";
  if (t == "avg_pool2d")
    return "F.avg_pool2d(" + arg(0) + ", " + pair(attr_ints(op, "kernel")) + ", " +
           pair(attr_ints(op, "stride")) + ", " + pair(attr_ints(op, "padding", {0, 0})) +
           (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") +
           (attr_int(op, "count_include_pad", 1) ? "" : ", count_include_pad=False") + ")";
  if (t == "adaptive_avg_pool2d")
    return "F.adaptive_avg_pool2d(" + arg(0) + ", " + pair(attr_ints(op, "output_size")) + ")";
  if (t == "softmax" || t == "log_softmax")
    return "F." + t + "(" + arg(0) + ", dim=" + std::to_string(attr_int(op, "dim")) + ")";
  if (t == "dropout")
    return "F.dropout(" + arg(0) + ", p=" + number(attr_double(op, "p", 0.5)) +
           ", training=" + (attr_int(op, "training", 1) ? "True" : "False") + ")";
  if (t == "hardtanh")
    return "F.hardtanh(" + arg(0) + ", " + number(attr_double(op, "min", -1)) + ", " +
           number(attr_double(op, "max", 1)) + ")";
  if (t == "clamp")
    return arg(0) + ".clamp(" +
           (has_attr(op, "min") ? "min=" + number(attr_double(op, "min")) : "") +
           (has_attr(op, "min") && has_attr(op, "max") ? ", " : "") +
           (has_attr(op, "max") ? "max=" + number(attr_double(op, "max")) : "") + ")";
  if (t == "cross_entropy" || t == "nll_loss" || t == "mse_loss")
    return "F." + t + "(" + arg(0) + ", " + arg(1) + ")";
  if (t == "embedding") return "F.embedding(" + arg(1) + ", " + arg(0) + ")";
  if (t == "relu_") return arg(0) + ".relu_()";
  if (t == "add_") return arg(0) + ".add_(" + arg(1) + ")";
  return "torch.ops.ckptlab." + t + "(" + join(a) + ")";  // no Python spelling known
}

std::string leaf_module(const OpNode& op, const std::vector<Shape>& params) {
  if (const OpSchema* row = OpTable::instance().find(op.op_type)) {
    if (row->python_module) return row->python_module(op_call(op), params);
    if (row->module_class && row->native_layer)
      return std::string("nn.") + row->module_class + "()";
  }
  const std::string& t = op.op_type;
  auto has = [&](std::size_t i) { return i < params.size() && !params[i].empty(); };
  auto dims = [&](std::size_t i) { return params[i]; };
  if (t == "linear" && has(1) && dims(1).size() == 2 && op.inputs.size() >= 2)
    return "nn.Linear(" + std::to_string(dims(1)[1]) + ", " + std::to_string(dims(1)[0]) +
           (has(2) ? "" : ", bias=False") + ")";
  if (t == "conv2d" && has(1) && dims(1).size() == 4) {
    const std::int64_t groups = attr_int(op, "groups", 1);
    const auto w = dims(1);
    std::string s = "nn.Conv2d(" + std::to_string(w[1] * groups) + ", " + std::to_string(w[0]) +
                    ", " + pair({w[2], w[3]});
    const auto stride = attr_ints(op, "stride", {1, 1});
    const auto padding = attr_ints(op, "padding", {0, 0});
    const auto dilation = attr_ints(op, "dilation", {1, 1});
    if (stride != std::vector<std::int64_t>{1, 1}) s += ", stride=" + pair(stride);
    if (padding != std::vector<std::int64_t>{0, 0}) s += ", padding=" + pair(padding);
    if (dilation != std::vector<std::int64_t>{1, 1}) s += ", dilation=" + pair(dilation);
    if (groups != 1) s += ", groups=" + std::to_string(groups);
    return s + (has(2) ? "" : ", bias=False") + ")";
  }
  if (t == "batch_norm" && has(1) && dims(1).size() == 1) {
    std::string s = "nn.BatchNorm2d(" + std::to_string(dims(1)[0]);
    const double eps = attr_double(op, "eps", 1e-5), momentum = attr_double(op, "momentum", 0.1);
    if (eps != 1e-5) s += ", eps=" + number(eps);
    if (momentum != 0.1) s += ", momentum=" + number(momentum);
    return s + ")";
  }
  if (t == "layer_norm" && has(1)) {
    const double eps = attr_double(op, "eps", 1e-5);
    return "nn.LayerNorm(" + ints(attr_ints(op, "normalized_shape")) +
           (eps != 1e-5 ? ", eps=" + number(eps) : "") + ")";
  }
  if (t == "relu") return "nn.ReLU()";
  if (t == "gelu") return "nn.GELU()";
  if (t == "sigmoid") return "nn.Sigmoid()";
  if (t == "tanh") return "nn.Tanh()";
  if (t == "identity") return "nn.Identity()";
  if (t == "hardtanh") {
    const double lo = attr_double(op, "min", -1), hi = attr_double(op, "max", 1);
    if (lo == 0 && hi == 6) return "nn.ReLU6()";
    return "nn.Hardtanh(" + number(lo) + ", " + number(hi) + ")";
  }
  if (t == "dropout") return "nn.Dropout(p=" + number(attr_double(op, "p", 0.5)) + ")";
  if (t == "softmax") return "nn.Softmax(dim=" + std::to_string(attr_int(op, "dim")) + ")";
  if (t == "log_softmax") return "nn.LogSoftmax(dim=" + std::to_string(attr_int(op, "dim")) + ")";
  if (t == "flatten")
    return "nn.Flatten(" + std::to_string(attr_int(op, "start_dim", 1)) + ", " +
           std::to_string(attr_int(op, "end_dim", -1)) + ")";
  if (t == "max_pool2d")
    return "nn.MaxPool2d(" + pair(attr_ints(op, "kernel")) +
           ", stride=" + pair(attr_ints(op, "stride")) +
           ", padding=" + pair(attr_ints(op, "padding", {0, 0})) +
           (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") + ")";
  if (t == "avg_pool2d")
    return "nn.AvgPool2d(" + pair(attr_ints(op, "kernel")) +
           ", stride=" + pair(attr_ints(op, "stride")) +
           ", padding=" + pair(attr_ints(op, "padding", {0, 0})) +
           (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") +
           (attr_int(op, "count_include_pad", 1) ? "" : ", count_include_pad=False") + ")";
  if (t == "adaptive_avg_pool2d")
    return "nn.AdaptiveAvgPool2d(" + pair(attr_ints(op, "output_size")) + ")";
  return "";
}

}  // namespace ckpt::py
