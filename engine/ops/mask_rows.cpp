// Rows of the ops that build masks in the forward (mask.cpp): factories (full, arange), triu and
// tril, comparisons with a number and `!=`, logical and/or, masked_fill and the in-place fills.
// They come from captures (mask_aten.cpp); none has an ONNX rule, since an exported mask is
// folded at load (onnx_constants_rows.cpp) or computed by the comparison rows (logical_rows.cpp).
// Registered with the logical family (logical_rows.cpp).
#include <cmath>

#include "engine/ops/mask.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

DType dtype_attr(const OpCall& n) {
  const std::string name = attr_string(n, "dtype", "float32");
  for (DType d :
       {DType::f32, DType::f64, DType::i64, DType::b8, DType::bf16, DType::f16, DType::i32})
    if (name == dtype_name(d)) return d;
  attr_error(n, "dtype", "'" + name + "' is not a dtype of the engine");
}

// A number attribute or, when the node has a tensor there (fill_.Tensor, masked_fill.Tensor: a
// 0-dim tensor), that tensor's value; a dry run reads nothing.
double value_of(const OpCall& n, const TensorList& x, std::size_t at) {
  if (x.size() <= at || !x[at].defined()) return attr_double(n, "value");
  if (x[at].numel() != 1)
    throw std::invalid_argument("the fill value must be a 0-dim tensor, got " + x[at].str());
  return x[at].is_meta() ? 0.0 : x[at].item();
}

TensorList run_full(const OpCall& n, const TensorList&) {
  return {filled(attr_ints(n, "shape"), attr_double(n, "value"), dtype_attr(n))};
}
TensorList run_arange(const OpCall& n, const TensorList&) {
  return {arange_range(attr_double(n, "start", 0), attr_double(n, "end"), attr_double(n, "step", 1),
                       dtype_attr(n))};
}
TensorList run_trilu(const OpCall& n, const TensorList& x) {
  return {trilu(x[0], attr_int(n, "diagonal", 0), attr_int(n, "upper", 1) != 0)};
}
TensorList run_compare_scalar(const OpCall& n, const TensorList& x) {
  return {compare_scalar(x[0], attr_double(n, "value"), attr_string(n, "op", "eq"))};
}
TensorList run_ne(const OpCall&, const TensorList& x) {
  return {not_equal(x[0], x[1])};
}
TensorList run_logical(const OpCall& n, const TensorList& x) {
  return {logical_binary(x[0], x[1], attr_string(n, "op", "and"))};
}
TensorList run_masked_fill(const OpCall& n, const TensorList& x) {
  return {masked_fill(x[0], x[1], value_of(n, x, 2))};
}
TensorList run_masked_fill_inplace(const OpCall& n, const TensorList& x) {
  Tensor t = x[0];
  masked_fill_(t, x[1], value_of(n, x, 2));
  return {t};
}
TensorList run_fill_inplace(const OpCall& n, const TensorList& x) {
  Tensor t = x[0];
  fill_(t, value_of(n, x, 1));
  return {t};
}

std::string value_text(const OpCall& n, const std::vector<std::string>& a, std::size_t at) {
  if (a.size() > at && !a[at].empty()) return a[at];
  const double v = attr_double(n, "value");
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  if (std::isnan(v)) return "float(\"nan\")";
  return rows::number(v);
}
std::string python_full(const OpCall& n, const std::vector<std::string>&, const Shape&) {
  return "torch.full(" + rows::ints(attr_ints(n, "shape")) + ", " + value_text(n, {}, 0) +
         ", dtype=torch." + attr_string(n, "dtype", "float32") + ")";
}
std::string python_arange(const OpCall& n, const std::vector<std::string>&, const Shape&) {
  return "torch.arange(" + rows::number(attr_double(n, "start", 0)) + ", " +
         rows::number(attr_double(n, "end")) + ", " + rows::number(attr_double(n, "step", 1)) +
         ", dtype=torch." + attr_string(n, "dtype", "float32") + ")";
}
std::string python_trilu(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return std::string(attr_int(n, "upper", 1) ? "torch.triu(" : "torch.tril(") + rows::arg(a, 0) +
         ", " + std::to_string(attr_int(n, "diagonal", 0)) + ")";
}
std::string python_compare_scalar(const OpCall& n, const std::vector<std::string>& a,
                                  const Shape&) {
  return "torch." + attr_string(n, "op", "eq") + "(" + rows::arg(a, 0) + ", " +
         value_text(n, {}, 0) + ")";
}
std::string python_ne(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + " != " + rows::arg(a, 1);
}
std::string python_logical(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "torch.logical_" + attr_string(n, "op", "and") + "(" + rows::arg(a, 0) + ", " +
         rows::arg(a, 1) + ")";
}
std::string python_masked_fill(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + ".masked_fill(" + rows::arg(a, 1) + ", " + value_text(n, a, 2) + ")";
}
std::string python_masked_fill_inplace(const OpCall& n, const std::vector<std::string>& a,
                                       const Shape&) {
  return rows::arg(a, 0) + ".masked_fill_(" + rows::arg(a, 1) + ", " + value_text(n, a, 2) + ")";
}
std::string python_fill_inplace(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + ".fill_(" + value_text(n, a, 1) + ")";
}

OpSchema mask_row(const char* type, int min_inputs, int max_inputs,
                  TensorList (*kernel)(const OpCall&, const TensorList&), PythonExpression python) {
  return OpSchema{.type = type,
                  .min_inputs = min_inputs,
                  .max_inputs = max_inputs,
                  .kernel = kernel,
                  .cost = rows::elementwise_cost,
                  .python = python};
}

}  // namespace

void register_mask_ops(OpTable& t) {
  t.add(mask_row("full", 0, 0, run_full, python_full));
  t.add(mask_row("arange", 0, 0, run_arange, python_arange));
  t.add(mask_row("trilu", 1, 1, run_trilu, python_trilu));
  t.add(mask_row("compare_scalar", 1, 1, run_compare_scalar, python_compare_scalar));
  t.add(mask_row("ne", 2, 2, run_ne, python_ne));
  t.add(mask_row("logical", 2, 2, run_logical, python_logical));
  t.add(mask_row("masked_fill", 2, 3, run_masked_fill, python_masked_fill));
  t.add(mask_row("masked_fill_", 2, 3, run_masked_fill_inplace, python_masked_fill_inplace));
  t.add(mask_row("fill_", 1, 2, run_fill_inplace, python_fill_inplace));
}

}  // namespace ckpt
