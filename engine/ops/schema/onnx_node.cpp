#include "engine/ops/schema/onnx_node.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace ckpt {

void OnnxNode::fail(const std::string& what) const {
  throw std::invalid_argument(failure_message(what));
}

const OnnxValue& OnnxNode::input(std::size_t i, const char* what) const {
  const OnnxValue* v = input_or_null(i);
  if (!v) fail(std::string("needs its ") + what + " input");
  return *v;
}

Tensor OnnxNode::constant_input(std::size_t i, const char* what) const {
  const OnnxValue& v = input(i, what);
  if (!v.constant)
    fail(std::string("its ") + what + " must be known when the model is loaded (a constant " +
         "or shape arithmetic on known shapes), but it is computed at run time");
  return v.probe;
}

std::vector<std::int64_t> OnnxNode::constant_ints(std::size_t i, const char* what) const {
  const auto v = constant_input(i, what).to_vector();
  std::vector<std::int64_t> out;
  out.reserve(v.size());
  // Exporters write INT64_MAX for "to the end" (Slice's ends); as a double it is 2^63, one past
  // int64's range, so the conversion clamps rather than overflows.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  for (double e : v) {
    if (std::isnan(e)) fail(std::string("its ") + what + " holds NaN where an integer belongs");
    out.push_back(e >= kTwoTo63   ? std::numeric_limits<std::int64_t>::max()
                  : e < -kTwoTo63 ? std::numeric_limits<std::int64_t>::min()
                                  : static_cast<std::int64_t>(e));
  }
  return out;
}

std::int64_t OnnxNode::attr_i(const std::string& name, std::int64_t fallback) const {
  const AttrValue* a = attr(name);
  if (!a) return fallback;
  if (auto p = std::get_if<std::int64_t>(a)) return *p;
  fail("attribute '" + name + "' must be an integer");
}

double OnnxNode::attr_f(const std::string& name, double fallback) const {
  const AttrValue* a = attr(name);
  if (!a) return fallback;
  if (auto p = std::get_if<double>(a)) return *p;
  if (auto p = std::get_if<std::int64_t>(a)) return static_cast<double>(*p);
  fail("attribute '" + name + "' must be a number");
}

std::vector<std::int64_t> OnnxNode::attr_ints(const std::string& name) const {
  const AttrValue* a = attr(name);
  if (!a) return {};
  if (auto p = std::get_if<std::vector<std::int64_t>>(a)) return *p;
  fail("attribute '" + name + "' must be a list of integers");
}

std::string OnnxNode::attr_s(const std::string& name, const std::string& fallback) const {
  const AttrValue* a = attr(name);
  if (!a) return fallback;
  if (auto p = std::get_if<std::string>(a)) return *p;
  fail("attribute '" + name + "' must be a string");
}

bool OnnxNode::fold_to(Tensor value) {
  define(y(), OnnxValue{true, "", std::move(value)});
  return true;
}

}  // namespace ckpt
