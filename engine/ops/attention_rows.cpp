// The row of scaled_dot_product_attention (attention.cpp): no ONNX op of the default domain is
// attention at opsets up to 17, so the importer recovers it from the chain PyTorch's exporter
// writes — MatMul → scale → [mask] → Softmax → [Dropout] → MatMul — with the scale where the
// graph has it: on the query (nn.MultiheadAttention), on the product (hand-written attention),
// or on query and key each by the fourth root of d (F.scaled_dot_product_attention's export).
#include <cmath>
#include <limits>

#include "engine/ops/attention.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

constexpr char kOp[] = "scaled_dot_product_attention";

AttentionScale read_scale(const OpCall& n, const std::string& where) {
  const std::string op = attr_string(n, where + "_scale_op", "none");
  AttentionScale s;
  if (op == "none") return s;
  if (op != "mul" && op != "div")
    attr_error(n, where + "_scale_op", "must be 'none', 'mul' or 'div', got '" + op + "'");
  s.op = op == "mul" ? AttentionScale::Op::mul : AttentionScale::Op::div;
  s.value = attr_double(n, where + "_scale");
  return s;
}

AttentionOptions options_of(const OpCall& n) {
  AttentionOptions o;
  o.query = read_scale(n, "query");
  o.key = read_scale(n, "key");
  o.scores = read_scale(n, "scores");
  const std::string mask = attr_string(n, "mask", "none");
  if (mask != "none" && mask != "add" && mask != "fill" && mask != "causal")
    attr_error(n, "mask", "must be 'none', 'add', 'fill' or 'causal', got '" + mask + "'");
  o.mask = mask == "add"      ? AttentionMask::add
           : mask == "fill"   ? AttentionMask::fill
           : mask == "causal" ? AttentionMask::causal
                              : AttentionMask::none;
  // Causal: the lowest float, as Hugging Face masks (-inf would make the recompute check's
  // sums NaN).
  if (o.mask == AttentionMask::causal) o.fill = std::numeric_limits<float>::lowest();
  o.fill = attr_double(n, "fill", o.fill);
  o.dropout = attr_double(n, "dropout", 0.0);
  return o;
}

// A capture's kernel (attention_aten.cpp: the one PyTorch 2.x ran on CUDA) under CUDA's memory
// semantics; the CPU's rules are PyTorch 1.13's, which has only the math.
TensorList run_attention(const OpCall& n, const TensorList& x) {
  const AttentionOptions o = options_of(n);
  const Tensor mask = optional_input(x, 3);
  if (!has_attr(n, "kernel")) return {scaled_dot_product_attention(x[0], x[1], x[2], mask, o)};
  const std::string name = attr_string(n, "kernel", "math");
  const AttentionKernel kernel = name == "efficient" ? AttentionKernel::efficient
                                 : name == "flash"   ? AttentionKernel::flash
                                 : name == "cudnn"   ? AttentionKernel::cudnn
                                                     : AttentionKernel::math;
  if (name != "math" && kernel == AttentionKernel::math)
    attr_error(n, "kernel", "must be 'math', 'efficient', 'flash' or 'cudnn', got '" + name + "'");
  const bool cuda =
      x[0].device() == Device::cuda ||
      (x[0].device() == Device::meta && current_memory_semantics().device == Device::cuda);
  return {scaled_dot_product_attention(x[0], x[1], x[2], mask, o,
                                       cuda ? kernel : AttentionKernel::math)};
}

// Two products of L × S × E (scores) and L × S × Ev (output), a few passes over the scores.
OpCost attention_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  const double scores =
      static_cast<double>(out[0].numel() / std::max<std::int64_t>(out[0].shape().back(), 1)) *
      static_cast<double>(in[1].shape().back());
  c.flops = 2 * scores * static_cast<double>(in[0].shape().back()) +
            2 * scores * static_cast<double>(out[0].shape().back()) + 5 * scores;
  c.bytes += 2 * scores * static_cast<double>(dtype_size(out[0].dtype()));
  return c;
}

std::string scaled(const std::string& x, const AttentionScale& s) {
  if (s.op == AttentionScale::Op::none) return x;
  return x + (s.op == AttentionScale::Op::mul ? " * " : " / ") + rows::number(s.value);
}

// The math as PyTorch 1.13 runs it (it has no F.scaled_dot_product_attention): the code export
// saves what the engine's math kernel saves.
std::string python_attention(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  const AttentionOptions o = options_of(op);
  std::string s = scaled("torch.matmul(" + scaled(rows::arg(a, 0), o.query) + ", " +
                             scaled(rows::arg(a, 1), o.key) + ")",
                         o.scores);
  if (o.mask == AttentionMask::add) s = "(" + s + ") + " + rows::arg(a, 3);
  if (o.mask == AttentionMask::fill)
    s = "(" + s + ").masked_fill(" + rows::arg(a, 3) + ".bool(), " + rows::number(o.fill) + ")";
  if (o.mask == AttentionMask::causal)
    s = "(_scores := " + s +
        ").masked_fill(torch.ones(_scores.shape[-2:], dtype=torch.bool, "
        "device=_scores.device).triu(1), " +
        rows::number(o.fill) + ")";
  s = "torch.softmax(" + s + ", dim=-1)";
  if (o.dropout > 0) s = "F.dropout(" + s + ", p=" + rows::number(o.dropout) + ")";
  return "torch.matmul(" + s + ", " + rows::arg(a, 2) + ")";
}

}  // namespace

std::vector<OnnxPattern> attention_patterns();  // attention_patterns.cpp

void register_attention_ops(OpTable& t) {
  t.add({.type = kOp,
         .min_inputs = 3,
         .max_inputs = 4,
         .kernel = run_attention,
         .policy_kind = {.name = "sdpa",
                         .aten = {"_scaled_dot_product_flash_attention",
                                  "_scaled_dot_product_efficient_attention",
                                  "_scaled_dot_product_cudnn_attention",
                                  "_scaled_dot_product_flash_attention_for_cpu"}},
         .cost = attention_cost,
         .python = python_attention,
         .onnx_patterns = attention_patterns(),
         // PyTorch 2.x's CUDA autocast casts F.scaled_dot_product_attention to the lower
         // precision (autocast_mode.cpp, lower_precision_fp), which picks flash or cuDNN; 1.13's
         // CPU autocast has no such op (its MultiheadAttention runs the math ops).
         .autocast = {.cpu = AutocastPolicy::none, .cuda = AutocastPolicy::lower}});
}

}  // namespace ckpt
