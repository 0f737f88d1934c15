// nn.Linear on an input of three or more dimensions, as PyTorch exports it: MatMul + Add (a 2-D
// input is one Gemm, onnx_gemm). Fused back into the linear row (matmul_rows.cpp), because the
// two ops differ from F.linear under autocast: the float32 bias added to the lower-precision
// product promotes the sum to float32, where F.linear casts the bias and keeps the output in
// bfloat16 or float16 (issue 40: the bf16 training step of nn.TransformerEncoder kept 1.13-1.17x
// PyTorch's peak). What the op saves does not change: the input (or its folded copy) and the
// weight, as MmBackward0 saved them.
#include "engine/ops/schema/onnx_pattern.hpp"

namespace ckpt {

namespace {

using namespace pattern;

// A transposition of a matrix: Transpose without perm, or with [1, 0].
bool swaps_two_axes(const OnnxFusion& f) {
  const auto perm = f.attr_ints("transposed", "perm");
  return perm.empty() || perm == std::vector<std::int64_t>{1, 0};
}

bool emit_linear(OnnxFusion& f) {
  const OnnxValue* x = f.value("x");
  const OnnxValue* bias = f.value("bias");
  const bool transposed = !f.op_type("transposed").empty();
  const OnnxValue* w = f.value(transposed ? "weight" : "weight_t");
  if (!x || !bias || !w || x->constant || x->probe.dim() < 3 || w->probe.dim() != 2 ||
      bias->probe.dim() != 1 || (transposed && !swaps_two_axes(f)))
    return false;
  // The weight as nn.Linear holds it, [out, in]: the file's own when the export transposed it
  // in the graph, else a view of the initializer it folded (Wᵀ, [in, out]).
  const Shape& ws = w->probe.shape();
  const std::int64_t in = transposed ? ws[1] : ws[0], out = transposed ? ws[0] : ws[1];
  if (x->probe.shape().back() != in || bias->probe.shape()[0] != out) return false;
  std::string weight = f.operand(transposed ? "weight" : "weight_t");
  if (!transposed)
    weight = f.emit_inner_op("transpose", {weight},
                             {{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{1}}})
                 .graph;
  f.emit_op("linear", {f.operand("x"), weight, f.operand("bias")}, {});
  return true;
}

}  // namespace

std::vector<OnnxPattern> linear_patterns() {
  const P weight =
      one_of({as("transposed", op("Transpose", {initializer("weight")})), initializer("weight_t")});
  return {{.name = "nn.Linear on 3-D or more (MatMul, Add)",
           .root = commutative("Add", op("MatMul", {any("x"), weight}), initializer("bias")),
           .module_class = "Linear",
           .fuse = emit_linear}};
}

}  // namespace ckpt
