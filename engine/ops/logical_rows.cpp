// Rows of the mask ops (logical.cpp): comparisons, where, logical_not and cast, each with its
// ONNX rule. A comparison, Where or Not on values known at load time folds there (shape checks,
// `expand(n, -1, -1)`, masks from buffers), booleans as int64 0/1; on values computed at run
// time it becomes the engine op, booleans one byte each (a key padding mask given as input).
#include "engine/ops/logical.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

using namespace onnx_rules;

constexpr char kGt[] = "gt", kLt[] = "lt", kGe[] = "ge", kLe[] = "le", kEq[] = "eq";
constexpr char kGtOp[] = " > ", kLtOp[] = " < ",
               kGeOp[] = " >= ", kLeOp[] = " <= ", kEqOp[] = " == ", kTorch[] = "torch.",
               kLogicalNot[] = "logical_not";

std::string python_where(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "torch.where(" + rows::arg(a, 0) + ", " + rows::arg(a, 1) + ", " + rows::arg(a, 2) + ")";
}
std::string python_cast(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + ".to(torch." + attr_string(n, "to", "float32") + ")";
}

template <Comparison Op>
TensorList run_compare(const OpCall&, const TensorList& x) {
  return {compare(x[0], x[1], Op)};
}
TensorList run_where(const OpCall&, const TensorList& x) {
  return {where(x[0], x[1], x[2])};
}
TensorList run_logical_not(const OpCall&, const TensorList& x) {
  return {logical_not(x[0])};
}

DType dtype_named(const std::string& name) {
  for (DType d : {DType::f32, DType::f64, DType::i64, DType::b8, DType::bf16, DType::f16})
    if (name == dtype_name(d)) return d;
  throw std::invalid_argument("cast: unknown dtype '" + name + "'");
}
TensorList run_cast(const OpCall& n, const TensorList& x) {
  return {cast(x[0], dtype_named(attr_string(n, "to", "float32")))};
}

template <const char* Type>
void onnx_compare(OnnxNode& n) {
  n.define(n.y(), n.emit_op(Type, {n.operand(0), n.operand(1)}, {}, n.y()));
}
void onnx_where(OnnxNode& n) {
  n.define(n.y(), n.emit_op("where", {n.operand(0), n.operand(1), n.operand(2)}, {}, n.y()));
}
void onnx_not(OnnxNode& n) {
  n.define(n.y(), n.emit_op("logical_not", {n.operand(0)}, {}, n.y()));
}

// Comparisons on known values, as int64 0/1 (load-time booleans).
template <Comparison Op>
bool fold_compare(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const Tensor a = n.constant_input(0, "first"), b = n.constant_input(1, "second");
  return n.fold_to(fold_binary(
      make(a.to_vector(), a.shape(), DType::i64), b,
      [&](double p, double q) {
        switch (Op) {
          case Comparison::gt:
            return p > q ? 1.0 : 0.0;
          case Comparison::lt:
            return p < q ? 1.0 : 0.0;
          case Comparison::ge:
            return p >= q ? 1.0 : 0.0;
          case Comparison::le:
            return p <= q ? 1.0 : 0.0;
          case Comparison::eq:
            break;
        }
        return p == q ? 1.0 : 0.0;
      },
      n.op_type().c_str()));
}

bool fold_where(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const Tensor cond = n.constant_input(0, "condition"), x = n.constant_input(1, "X"),
               y = n.constant_input(2, "Y");
  // where(c, x, y) = broadcast(c, x) picks x, then broadcast with y picks y where c is 0.
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), x.shape(), "Where"), y.shape(), "Where");
  const Tensor frame = make(std::vector<double>(static_cast<std::size_t>(shape_numel(shape)), 0.0),
                            shape, x.dtype());
  const auto pick = [](double, double v) { return v; };
  const auto cv = fold_binary(frame, cond, pick, "Where").to_vector();
  const auto xv = fold_binary(frame, x, pick, "Where").to_vector();
  const auto yv = fold_binary(frame, y, pick, "Where").to_vector();
  std::vector<double> out(cv.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = cv[i] != 0 ? xv[i] : yv[i];
  return n.fold_to(make(out, shape, x.dtype()));
}

bool fold_not(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const Tensor x = n.constant_input(0, "X");
  return n.fold_to(make(fold_unary(x, [](double v) { return v == 0 ? 1.0 : 0.0; }).to_vector(),
                        x.shape(), DType::i64));
}

OpSchema row(const char* type, int inputs, TensorList (*kernel)(const OpCall&, const TensorList&),
             OnnxRule onnx) {
  return OpSchema{.type = type,
                  .min_inputs = inputs,
                  .max_inputs = inputs,
                  .kernel = kernel,
                  .cost = rows::elementwise_cost,
                  .onnx = {std::move(onnx)}};
}

template <const char* Type, Comparison Op, const char* Infix>
OpSchema comparison_row(const char* onnx_type, int since) {
  OpSchema r = row(Type, 2, run_compare<Op>,
                   {.op_type = onnx_type,
                    .since = since,
                    .translate = onnx_compare<Type>,
                    .fold = fold_compare<Op>});
  r.python = rows::python_infix<Infix>;
  return r;
}

}  // namespace

void register_mask_ops(OpTable& t);  // mask_rows.cpp: the masks a captured forward builds

void register_logical_ops(OpTable& t) {
  register_mask_ops(t);
  t.add(comparison_row<kGt, Comparison::gt, kGtOp>("Greater", 7));
  t.add(comparison_row<kLt, Comparison::lt, kLtOp>("Less", 7));
  t.add(comparison_row<kGe, Comparison::ge, kGeOp>("GreaterOrEqual", 12));
  t.add(comparison_row<kLe, Comparison::le, kLeOp>("LessOrEqual", 12));
  t.add(comparison_row<kEq, Comparison::eq, kEqOp>("Equal", 1));
  OpSchema where_row =
      row("where", 3, run_where,
          {.op_type = "Where", .since = 9, .translate = onnx_where, .fold = fold_where});
  where_row.python = python_where;
  t.add(std::move(where_row));
  OpSchema not_row = row("logical_not", 1, run_logical_not,
                         {.op_type = "Not", .translate = onnx_not, .fold = fold_not});
  not_row.python = rows::python_function<kTorch, kLogicalNot>;
  t.add(std::move(not_row));
  t.add(OpSchema{.type = "cast",
                 .min_inputs = 1,
                 .max_inputs = 1,
                 .kernel = run_cast,
                 .cost = rows::elementwise_cost,
                 .python = python_cast});
}

}  // namespace ckpt
