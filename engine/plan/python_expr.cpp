#include "engine/plan/python_expr.hpp"

#include <cctype>
#include <set>

#include "engine/model/op_registry.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/run/optimizer.hpp"

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

std::string op_expression(const OpNode& op, const std::vector<std::string>& a, const Shape& shape) {
  if (const OpSchema* row = OpTable::instance().find(op.op_type); row && row->python)
    return row->python(op_call(op), a, shape);
  return "torch.ops.ckptlab." + op.op_type + "(" + rows::join(a) + ")";  // no Python spelling known
}

std::string leaf_module(const OpNode& op, const std::vector<Shape>& params) {
  const OpSchema* row = OpTable::instance().find(op.op_type);
  return row && row->python_module ? row->python_module(op_call(op), params) : "";
}

std::string optimizer_constructor(const OptimizerSettings& settings,
                                  const std::string& parameters) {
  const OptimizerHyper h = optimizer_hyper(settings);
  const std::string lr = "lr=" + number(h.lr);
  const std::string decay = ", weight_decay=" + number(h.weight_decay);
  const std::string adam = lr + ", betas=(" + number(h.beta1) + ", " + number(h.beta2) +
                           "), eps=" + number(h.eps) + decay;
  switch (settings.kind) {
    case OptimizerKind::none:
      return "";
    case OptimizerKind::sgd:
      return "torch.optim.SGD(" + parameters + ", " + lr + decay + ")";
    case OptimizerKind::momentum:
      return "torch.optim.SGD(" + parameters + ", " + lr + ", momentum=" + number(h.momentum) +
             decay + ")";
    case OptimizerKind::adam:
      return "torch.optim.Adam(" + parameters + ", " + adam + ")";
    case OptimizerKind::adamw:
      return "torch.optim.AdamW(" + parameters + ", " + adam + ")";
  }
  return "";
}

}  // namespace ckpt::py
