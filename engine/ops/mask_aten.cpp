// ATen rules of the masks a forward builds (docs/capture_format.md, "Masks"): the factories
// (full, zeros, ones, new_*, *_like, scalar_tensor, arange; empty or empty_like then fill_ or
// zero_) become the engine's `full` and `arange`, made where PyTorch makes them; triu/tril,
// comparisons, logical ops, masked_fill and the in-place fills of a mask being built (Swin's
// slice assignments) their rows of mask_rows.cpp. A factory's arguments are what the capture
// recorded, so a capture on meta tensors loses nothing: the values are computed in a real run.
#include "engine/ops/aten_values.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

std::string bare(const std::string& aten) {
  return aten.rfind("aten::", 0) == 0 ? aten.substr(6) : aten;
}

void emit_full(AtenNode& n, double value) {
  n.emit1("full", {},
          {{"shape", Shape(n.output_shape(0))},
           {"value", value},
           {"dtype", std::string(dtype_name(n.output_dtype(0)))}});
}

// full(size, fill_value), new_full(self, size, fill_value), full_like(self, fill_value),
// scalar_tensor(s).
void aten_full(AtenNode& n) {
  emit_full(n, n.number(n.has("fill_value") ? "fill_value" : "s"));
}
void aten_zeros(AtenNode& n) {
  emit_full(n, 0.0);
}
void aten_ones(AtenNode& n) {
  emit_full(n, 1.0);
}

void aten_arange(AtenNode& n) {
  const bool ranged = n.has("start");
  n.emit1("arange", {},
          {{"start", ranged ? n.number("start") : 0.0},
           {"end", n.number("end")},
           {"step", n.number_or("step", 1)},
           {"dtype", std::string(dtype_name(n.output_dtype(0)))}});
}

void aten_trilu(AtenNode& n) {
  n.emit1("trilu", {n.tensor("self")},
          {{"diagonal", n.integer_or("diagonal", 0)},
           {"upper", std::int64_t{bare(n.name()) == "triu" ? 1 : 0}}});
}

// eq ne gt lt ge le: against a number (.Scalar, or a number given as .Tensor's `other`), or
// against a tensor (the comparison rows; != here).
void aten_compare(AtenNode& n) {
  const std::string op = bare(n.name());
  const std::string x = n.tensor("self");
  if (!n.is_tensor("other")) {
    n.emit1("compare_scalar", {x}, {{"op", op}, {"value", n.number("other")}});
    return;
  }
  n.emit1(op, {x, n.tensor("other")});
}

// logical_not and bitwise_not of a bool mask are the same; bitwise_not of integers is not.
void aten_not(AtenNode& n) {
  const std::string x = n.tensor("self");
  if (bare(n.name()) == "bitwise_not" && n.probe(x).dtype() != DType::b8)
    n.fail("bitwise_not is supported on bool masks only, got " + n.probe(x).str());
  n.emit1("logical_not", {x});
}
void aten_logical(AtenNode& n) {
  const std::string name = bare(n.name());
  const std::string x = n.tensor("self"), y = n.tensor("other");
  if (name.rfind("bitwise_", 0) == 0 &&
      (n.probe(x).dtype() != DType::b8 || n.probe(y).dtype() != DType::b8))
    n.fail(name + " is supported on bool masks only");
  n.emit1("logical", {x, y},
          {{"op", std::string(name.find("and") != std::string::npos ? "and" : "or")}});
}

// The number a tensor holds where the load knows it: a one-element constant of the file
// (torch.tensor(k), lifted), or a `full` (scalar_tensor on meta), through views and expands.
bool known_number(const AtenNode& n, std::string graph, double& value) {
  const AtenNode::Producer* made = n.producer(graph);
  while (made && (made->type == "expand" || made->type == "view") && made->inputs.size() == 1) {
    graph = made->inputs[0];
    made = n.producer(graph);
  }
  if (!made || (made->type != "full" && made->type != "constant") || !made->attrs.count("value") ||
      n.probe(graph).numel() != 1)
    return false;
  value = std::get<double>(made->attrs.at("value"));
  return true;
}

// The value of masked_fill and fill_: a number, or a tensor holding a known number (the same
// engine op whether PyTorch wrapped the number on the CPU or on meta). A computed tensor value
// would take a gradient in PyTorch (MaskedFillBackward1), which the engine's op does not give.
std::vector<std::string> with_value(AtenNode& n, std::vector<std::string> inputs,
                                    Attributes& attrs) {
  double number = 0;
  if (!n.is_tensor("value")) {
    attrs["value"] = n.number("value");
  } else if (known_number(n, n.tensor("value"), number)) {
    attrs["value"] = number;
  } else {
    n.fail("the fill value is a computed tensor; a number or a 0-dim constant is supported");
  }
  return inputs;
}

// masked_fill_ writes in place into a mask being built (factories behind it); on an activation
// (`scores.masked_fill_(mask, -inf)`) it is the out-of-place op, a new version as the engine's
// in-place ops make one: the same bytes saved (the mask), one more buffer for an instant.
void aten_masked_fill(AtenNode& n) {
  Attributes attrs;
  const std::string x = n.tensor("self");
  const auto inputs = with_value(n, {x, n.tensor("mask")}, attrs);
  const bool in_place = bare(n.name()) == "masked_fill_" && made_by_factories(n, x);
  n.emit1(in_place ? "masked_fill_" : "masked_fill", inputs, attrs);
}

constexpr char kGradientWrite[] =
    "an in-place write into a tensor that takes a gradient (a view of an activation, or of a "
    "parameter's clone as Swin V2's qkv_bias: PyTorch's CopySlices) is not supported";

// fill_ and zero_: of a fresh empty or empty_like (no engine op made it), the tensor is made
// here, filled; of a tensor the forward made (a view of it: a slice assignment), it is written
// in place.
void aten_fill_(AtenNode& n) {
  const bool zero = bare(n.name()) == "zero_";
  const std::string x = n.tensor("self");
  const Attributes* fresh = n.pending(x);
  if (fresh) {
    if (!fresh->count("empty") && !fresh->count("like"))
      n.fail("fills a value the engine does not compute");
    double number = 0;
    if (!zero && n.is_tensor("value") && !known_number(n, n.tensor("value"), number))
      n.fail("fill_ of a fresh empty tensor with a computed value is not supported");
    return emit_full(n, zero ? 0.0 : n.is_tensor("value") ? number : n.number("value"));
  }
  if (takes_gradient(n, x)) n.fail(kGradientWrite);
  if (zero) {
    n.emit1("fill_", {x}, {{"value", 0.0}});
    return;
  }
  Attributes attrs;
  const auto inputs = with_value(n, {x}, attrs);
  n.emit1("fill_", inputs, attrs);
}

// copy_ of one number into a view (a slice assignment `mask[a:b] = k` as PyTorch dispatches it
// on meta tensors: scalar_tensor, view, expand, copy_) is fill_, as the CPU's lift_fresh and
// fill_.Tensor are; a copy of computed values is not supported.
void aten_copy_(AtenNode& n) {
  if (takes_gradient(n, n.tensor("self"))) n.fail(kGradientWrite);
  double number = 0;
  if (!known_number(n, n.tensor("src"), number))
    n.fail(
        "copy_ is supported only of a number into a tensor (a slice assignment), not of "
        "computed values");
  n.emit1("fill_", {n.tensor("self")}, {{"value", number}});
}

void aten_where(AtenNode& n) {
  if (n.overload() != "self")
    n.fail("where." + n.overload() + " is not supported (where.self, of three tensors, is)");
  n.emit1("where", {n.tensor("condition"), n.tensor("self"), n.tensor("other")});
}

}  // namespace

void register_mask_aten(OpTable& t) {
  t.add_aten("full", {{"aten::full", aten_full},
                      {"aten::new_full", aten_full},
                      {"aten::full_like", aten_full},
                      {"aten::scalar_tensor", aten_full},
                      {"aten::zeros", aten_zeros},
                      {"aten::new_zeros", aten_zeros},
                      {"aten::zeros_like", aten_zeros},
                      {"aten::ones", aten_ones},
                      {"aten::new_ones", aten_ones},
                      {"aten::ones_like", aten_ones}});
  t.add_aten("arange", {{"aten::arange", aten_arange}});
  t.add_aten("trilu", {{"aten::triu", aten_trilu}, {"aten::tril", aten_trilu}});
  t.add_aten("compare_scalar", {{"aten::eq", aten_compare},
                                {"aten::ne", aten_compare},
                                {"aten::gt", aten_compare},
                                {"aten::lt", aten_compare},
                                {"aten::ge", aten_compare},
                                {"aten::le", aten_compare}});
  t.add_aten("logical_not", {{"aten::logical_not", aten_not}, {"aten::bitwise_not", aten_not}});
  t.add_aten("logical", {{"aten::logical_and", aten_logical},
                         {"aten::logical_or", aten_logical},
                         {"aten::bitwise_and", aten_logical},
                         {"aten::bitwise_or", aten_logical}});
  t.add_aten("masked_fill", {{"aten::masked_fill", aten_masked_fill}});
  t.add_aten("masked_fill_", {{"aten::masked_fill_", aten_masked_fill}});
  t.add_aten(
      "fill_",
      {{"aten::fill_", aten_fill_}, {"aten::zero_", aten_fill_}, {"aten::copy_", aten_copy_}});
  t.add_aten("where", {{"aten::where", aten_where}});
}

}  // namespace ckpt
