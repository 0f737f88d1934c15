// The attention core's pattern (the scaled_dot_product_attention row, attention_rows.cpp).
#include <cmath>

#include "engine/ops/schema/onnx_pattern.hpp"

namespace ckpt {

namespace {

using namespace pattern;

// x scaled by a known number, either side of a Mul or as a Div; `name` binds the scaling node,
// name + "_by" the number.
P scaling(const P& x, const std::string& name) {
  const std::string by = name + "_by";
  return as(name.c_str(), one_of({op("Div", {x, constant(by.c_str())}),
                                  commutative("Mul", x, constant(by.c_str()))}));
}

P maybe_scaled(const P& x, const char* name) {
  return one_of({scaling(x, name), x});
}

// At least one scaling: a Softmax(MatMul) chain without one is not attention's.
bool scaled_somewhere(const OnnxMatch& m) {
  return m.bound.count("q_scaling") || m.bound.count("k_scaling") || m.bound.count("s_scaling");
}

struct Scale {
  std::string op = "none";
  double by = 1;
};

// The scaling bound to `name`, if any: its op and number (one element), or nothing when the
// number is not one. A scaling by exactly 1 is none: torch.baddbmm's export (nn.MultiheadAttention
// with a mask, PyTorch 1.13) multiplies the product by its alpha, which PyTorch's own baddbmm
// does without keeping anything.
std::optional<Scale> scale_of(const OnnxFusion& f, const std::string& name) {
  const std::string type = f.op_type(name);
  if (type.empty()) return Scale{};
  const auto by = f.scalar(name + "_by");
  if (!by) return std::nullopt;
  if (*by == 1) return Scale{};
  return Scale{type == "Div" ? "div" : "mul", *by};
}

bool emit_attention(OnnxFusion& f) {
  const OnnxValue* q = f.value("query");
  const OnnxValue* kt = f.value("key_t");
  const OnnxValue* v = f.value("value");
  if (!q || !kt || !v || q->constant || kt->constant || v->constant) return false;
  const auto rank = q->probe.dim();
  if (rank < 2 || kt->probe.dim() != rank || v->probe.dim() != rank) return false;
  // Softmax over the last axis (below opset 13 the axis flattens the rest: the same when it is
  // the last one).
  const std::int64_t axis = f.attr_i("softmax", "axis", f.opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != rank - 1) return false;
  Attributes a;
  for (const auto& [name, where] :
       {std::pair{"q_scaling", "query"}, {"k_scaling", "key"}, {"s_scaling", "scores"}}) {
    const auto s = scale_of(f, name);
    if (!s) return false;
    if (s->op == "none") continue;
    a[std::string(where) + "_scale_op"] = s->op;
    a[std::string(where) + "_scale"] = s->by;
  }
  std::vector<std::string> inputs{f.operand("query"), f.operand("key_t"), f.operand("value")};
  if (f.value("mask")) {
    const bool fill = f.op_type("masked") == "Where";
    a["mask"] = std::string(fill ? "fill" : "add");
    if (fill) {
      const auto value = f.scalar("fill");
      if (!value) return false;
      a["fill"] = *value;
    }
    inputs.push_back(f.operand("mask"));
  }
  if (!f.op_type("dropout").empty()) {
    const OnnxValue* ratio = f.value("ratio");
    const OnnxValue* training = f.value("training");
    const double p = ratio ? ratio->probe.item() : 0.5;
    if (training && training->probe.item() != 0 && p > 0) a["dropout"] = p;
  }
  f.emit_op("scaled_dot_product_attention", inputs, std::move(a));
  return true;
}

}  // namespace

std::vector<OnnxPattern> attention_patterns() {
  const P product = op(
      "MatMul", {maybe_scaled(any("query"), "q_scaling"), maybe_scaled(any("key_t"), "k_scaling")});
  const P scores = maybe_scaled(product, "s_scaling");
  const P masked =
      one_of({as("masked", commutative("Add", scores, any("mask"))),
              as("masked", op("Where", {any("mask"), constant("fill"), scores})), scores});
  const P probs = as("softmax", op("Softmax", {masked}));
  const P dropped =
      one_of({as("dropout",
                 op("Dropout", {probs, optional_constant("ratio"), optional_constant("training")})),
              probs});
  return {{.name = "attention (MatMul, scale, [mask], Softmax, [Dropout], MatMul)",
           .root = op("MatMul", {dropped, any("value")}),
           .module_class = nullptr,
           .accept = scaled_somewhere,
           .fuse = emit_attention}};
}

}  // namespace ckpt
