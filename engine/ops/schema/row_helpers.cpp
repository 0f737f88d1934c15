#include "engine/ops/schema/row_helpers.hpp"

#include <charconv>
#include <cmath>

namespace ckpt::rows {

OpCost elementwise_cost(const OpCall&, const TensorList& inputs, const TensorList& outputs) {
  OpCost c;
  for (const Tensor& t : outputs)
    if (t.defined()) {
      c.flops += static_cast<double>(t.numel());
      c.bytes += static_cast<double>(t.nbytes());
    }
  for (const Tensor& t : inputs)
    if (t.defined()) c.bytes += static_cast<double>(t.nbytes());
  return c;
}

OpSchema one_pass_row(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&),
                      PythonExpression python, std::vector<OnnxRule> onnx,
                      PythonModule python_module) {
  return {.type = type,
          .kernel = kernel,
          .cost = elementwise_cost,
          .python = python,
          .python_module = python_module,
          .onnx = std::move(onnx)};
}

ValueNames layer_with_dim(NativeLayerCall& c) {
  return c.emit_op(c.type(), c.one(), {{"dim", c.get_int("dim")}});
}

ValueNames layer_with_shape(NativeLayerCall& c) {
  return c.emit_op(c.type(), c.one(), {{"shape", c.get_int_list("shape")}});
}

ValueNames layer_reduction(NativeLayerCall& c) {
  if (!c.has("dims")) return c.emit_op(c.type(), c.one(), {});
  return c.emit_op(c.type() + "_dims", c.one(),
                   {{"dims", c.get_int_list("dims")},
                    {"keepdim", std::int64_t{c.get_bool("keepdim", false) ? 1 : 0}}});
}

ValueNames layer_arithmetic(NativeLayerCall& c) {
  if (c.inputs().size() == 2) return c.emit_op(c.type(), c.inputs(), {});
  const ValueNames x = c.one();
  if (c.has("param"))
    return c.emit_op(c.type(), {x[0], c.lookup_param(c.get_string("param", ""))}, {});
  if (c.has("other")) return c.emit_op(c.type(), {x[0], c.lookup(c.get_string("other", ""))}, {});
  if (c.has("scalar"))
    return c.emit_op(c.type() + "_scalar", x, {{"value", c.get_double("scalar", 0)}});
  c.fail(c.type() +
         " takes two inputs, or one input and a \"param\", an \"other\" value or a \"scalar\"");
}

std::string python_call(const char* callee, const std::vector<std::string>& args) {
  std::string s = std::string(callee) + "(";
  bool first = true;
  for (const auto& a : args) {
    if (a.empty()) continue;
    s += (first ? "" : ", ") + a;
    first = false;
  }
  return s + ")";
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

std::string pair(const std::vector<std::int64_t>& v) {
  if (v.size() == 2 && v[0] == v[1]) return std::to_string(v[0]);
  return ints(v);
}

std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string index_expr(const std::string& x, std::int64_t dim, const std::string& item) {
  std::string s = x + "[";
  for (std::int64_t d = 0; d < dim; ++d) s += ":, ";
  return s + item + "]";
}

std::int64_t wrap(std::int64_t d, const Shape& shape) {
  const auto n = static_cast<std::int64_t>(shape.size());
  return d < 0 && n > 0 ? d + n : d;
}

std::string arg(const std::vector<std::string>& a, std::size_t i) {
  return i < a.size() ? a[i] : std::string();
}

std::string arg_or_none(const std::vector<std::string>& a, std::size_t i) {
  return arg(a, i).empty() ? std::string("None") : arg(a, i);
}

}  // namespace ckpt::rows
