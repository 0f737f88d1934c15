// C++ halves of the per-op oracle cases (cases_nn.py).
#include <limits>

#include "engine/ops/mask.hpp"
#include "engine/ops/ops.hpp"
#include "engine/ops/vector_norm.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;

namespace {
std::array<std::int64_t, 2> pair(const oracle::OracleCase& c, const std::string& key) {
  const auto v = c.attr_ints(key);
  return {v.at(0), v.at(1)};
}
}  // namespace

CKPTLAB_ORACLE_CASE(conv2d) {
  return {conv2d(c.input("x"), c.param("w"), c.attr_bool("bias") ? c.param("b") : Tensor(),
                 pair(c, "stride"), pair(c, "padding"), pair(c, "dilation"), c.attr_int("groups"))};
}

CKPTLAB_ORACLE_CASE(max_pool2d) {
  return {max_pool2d(c.input("x"), pair(c, "kernel"), pair(c, "stride"), pair(c, "padding"),
                     pair(c, "dilation"), c.attr_bool("ceil_mode"))};
}

CKPTLAB_ORACLE_CASE(avg_pool2d) {
  return {avg_pool2d(c.input("x"), pair(c, "kernel"), pair(c, "stride"), pair(c, "padding"),
                     c.attr_bool("ceil_mode"), c.attr_bool("count_include_pad"))};
}

CKPTLAB_ORACLE_CASE(adaptive_avg_pool2d) {
  return {adaptive_avg_pool2d(c.input("x"), pair(c, "size"))};
}

CKPTLAB_ORACLE_CASE(batch_norm) {
  const bool training = c.attr_bool("training");
  if (!c.attr_bool("affine"))
    return {batch_norm(c.input("x"), Tensor(), Tensor(), Tensor(), Tensor(), training)};
  const bool counts = c.name() == "batch_norm@train";
  return {batch_norm(c.input("x"), c.param("w"), c.param("b"), c.buffer("running_mean"),
                     c.buffer("running_var"), training, 0.1, 1e-5,
                     counts ? c.buffer("num_batches_tracked") : Tensor())};
}

CKPTLAB_ORACLE_CASE(layer_norm) {
  const auto shape = c.attr_ints("shape");
  if (c.name() == "layer_norm@basic")
    return {layer_norm(c.input("x"), shape, c.param("w"), c.param("b"))};
  return {layer_norm(c.input("x"), shape, Tensor(), Tensor())};
}

CKPTLAB_ORACLE_CASE(softmax) {
  return {softmax(c.input("x"), 1)};
}

CKPTLAB_ORACLE_CASE(log_softmax) {
  return {log_softmax(c.input("x"), -1)};
}

CKPTLAB_ORACLE_CASE(cross_entropy) {
  return {cross_entropy(c.input("x"), c.input("target"), c.attr_string("reduction"),
                        c.attr_int("ignore_index"))};
}

CKPTLAB_ORACLE_CASE(nll_loss) {
  return {nll_loss(log_softmax(c.input("x"), 1), c.input("target"))};
}

CKPTLAB_ORACLE_CASE(mse_loss) {
  return {mse_loss(c.input("x"), c.input("target"), c.attr_string("reduction"))};
}

CKPTLAB_ORACLE_CASE(dropout) {
  Tensor y = dropout(c.input("x"), c.attr_double("p"), c.attr_bool("training"));
  if (c.name() == "dropout@p0") return {tanh(y)};
  if (c.name() == "dropout@eval") return {sigmoid(y)};
  return {y};
}

CKPTLAB_ORACLE_CASE(embedding) {
  return {embedding(c.param("w"), c.input("idx"))};
}

CKPTLAB_ORACLE_CASE(clamp) {
  return {clamp(c.input("x"), -0.5, 0.5)};
}

CKPTLAB_ORACLE_CASE(relu6) {
  return {hardtanh(c.input("x"), 0, 6)};
}

CKPTLAB_ORACLE_CASE(hardswish) {
  return {hardswish(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(hardsigmoid) {
  return {hardsigmoid(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(constant_pad) {
  const Tensor y = constant_pad(c.input("x"), c.attr_ints("before"), c.attr_ints("after"),
                                c.attr_double("value"));
  return {mul(sigmoid(y), y)};
}

CKPTLAB_ORACLE_CASE(silu) {
  return {silu(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(mish) {
  return {mish(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(glu) {
  return {glu(c.input("x"), c.attr_int("dim"))};
}

CKPTLAB_ORACLE_CASE(rsqrt) {
  return {rsqrt(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(reciprocal) {
  return {reciprocal(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(gelu) {
  return {c.attr_string("approximate") == "tanh" ? gelu_tanh(c.input("x")) : gelu(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(scaled_dot_product_attention) {
  const bool masked = c.attr_string("form") == "scores_masked";
  AttentionOptions o;
  if (masked) {
    o.scores = {AttentionScale::Op::mul, 0.5};
    o.mask = AttentionMask::add;
  } else {
    o.query = {AttentionScale::Op::div, 2.0};
  }
  return {scaled_dot_product_attention(c.input("q"), transpose(c.input("k"), -2, -1), c.input("v"),
                                       masked ? c.input("mask") : Tensor(), o,
                                       AttentionKernel::math)};
}

CKPTLAB_ORACLE_CASE(leaky_relu) {
  return {leaky_relu(c.input("x"), c.attr_double("slope"))};
}

CKPTLAB_ORACLE_CASE(elu) {
  return {elu(c.input("x"), c.attr_double("alpha"))};
}

CKPTLAB_ORACLE_CASE(softplus) {
  return {softplus(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(abs) {
  return {abs(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(upsample_nearest2d) {
  const auto size = c.attr_ints("size");
  return {mul(upsample_nearest2d(c.input("x"), {size.at(0), size.at(1)}), c.input("w"))};
}

CKPTLAB_ORACLE_CASE(upsample_bilinear2d) {
  const auto size = c.attr_ints("size");
  const double scale = c.attr_double("scale");
  return {mul(upsample_bilinear2d(c.input("x"), {size.at(0), size.at(1)},
                                  c.attr_bool("align_corners"), {scale, scale}),
              c.input("w"))};
}

CKPTLAB_ORACLE_CASE(conv_transpose2d) {
  return {conv_transpose2d(
      c.input("x"), c.param("w"), c.attr_bool("bias") ? c.param("b") : Tensor(), pair(c, "stride"),
      pair(c, "padding"), pair(c, "output_padding"), pair(c, "dilation"), c.attr_int("groups"))};
}

CKPTLAB_ORACLE_CASE(repeat) {
  return {mul(repeat(c.input("x"), c.attr_ints("repeats")), c.input("w"))};
}

CKPTLAB_ORACLE_CASE(amax) {
  return {mul(amax(c.input("x"), c.attr_ints("dims"), c.attr_bool("keepdim")), 1.5)};
}

CKPTLAB_ORACLE_CASE(maximum) {
  return {mul(maximum(c.input("a"), c.input("b")), c.input("w"))};
}

CKPTLAB_ORACLE_CASE(minimum) {
  return {mul(minimum(c.input("a"), c.input("b")), c.input("w"))};
}

CKPTLAB_ORACLE_CASE(sign) {
  const Tensor x = c.input("x");
  return {mul(sign(x), x)};
}

CKPTLAB_ORACLE_CASE(erf) {
  return {erf(c.input("x"))};
}

CKPTLAB_ORACLE_CASE(relu_inplace) {
  Tensor y = mul(c.input("x"), 2.0);
  relu_(y);
  return {y};
}

CKPTLAB_ORACLE_CASE(add_inplace) {
  Tensor y = mul(sigmoid(c.input("x")), c.input("s"));
  add_(y, c.input("b"));
  return {y};
}

CKPTLAB_ORACLE_CASE(inplace_modifies_saved) {
  Tensor y = sigmoid(c.input("x"));
  add_(y, c.input("b"));
  return {y};
}

CKPTLAB_ORACLE_CASE(inplace_on_leaf) {
  Tensor x = c.input("x");
  return {relu_(x)};
}

CKPTLAB_ORACLE_CASE(matmul) {
  Tensor a = c.input("a"), b = c.input("b");
  const auto how = c.attr_string("how");
  if (how == "t01") a = transpose(a, 0, 1);
  if (how == "slice") a = slice(a, -1, 0, 4);
  if (how == "attention") {
    a = transpose(a, 1, 2);
    b = transpose(transpose(b, 1, 2), -1, -2);
  }
  return {matmul(a, b)};
}

namespace {
// "<kind>@where": where(a <kind> b, 2a, b), the comparison named by the case's attribute.
TensorList comparison_case(oracle::OracleCase& c) {
  const Tensor a = c.input("a"), b = c.input("b");
  const auto kind = c.attr_string("kind");
  const Comparison op = kind == "gt"   ? Comparison::gt
                        : kind == "lt" ? Comparison::lt
                        : kind == "ge" ? Comparison::ge
                        : kind == "le" ? Comparison::le
                                       : Comparison::eq;
  return {where(compare(a, b, op), mul(a, 2.0), b)};
}
}  // namespace

CKPTLAB_ORACLE_CASE(gt) {
  return comparison_case(c);
}
CKPTLAB_ORACLE_CASE(lt) {
  return comparison_case(c);
}
CKPTLAB_ORACLE_CASE(ge) {
  return comparison_case(c);
}
CKPTLAB_ORACLE_CASE(le) {
  return comparison_case(c);
}
CKPTLAB_ORACLE_CASE(eq) {
  return comparison_case(c);
}

CKPTLAB_ORACLE_CASE(where) {
  const Tensor mask = gt(c.input("pad"), Tensor::scalar(0.5));
  return {softmax(
      where(mask, Tensor::scalar(-std::numeric_limits<double>::infinity()), c.input("scores")),
      -1)};
}

CKPTLAB_ORACLE_CASE(logical_not) {
  const Tensor x = c.input("x");
  return {where(logical_not(gt(x, Tensor::scalar(0.0))), mul(x, 3.0), x)};
}

CKPTLAB_ORACLE_CASE(cast) {
  return {mul(c.input("x"), cast(gt(c.input("keep"), Tensor::scalar(0.0)), DType::f32))};
}

CKPTLAB_ORACLE_CASE(rms_norm) {  // RMSNorm as eager PyTorch writes it
  const Tensor x = c.input("x");
  const Tensor inv = rsqrt(add(mean(pow(x, 2.0), {-1}, true), 1e-5));
  return {mul(mul(x, inv), c.param("w"))};
}

// Masks a forward builds (cases_nn.py, "masks"): engine/ops/mask.hpp.
CKPTLAB_ORACLE_CASE(full) {
  const Tensor causal =
      trilu(filled({5, 5}, -std::numeric_limits<double>::infinity(), DType::f32), 1, true);
  return {softmax(add(c.input("scores"), causal), -1)};
}

CKPTLAB_ORACLE_CASE(arange) {
  return {mul(c.input("x"),
              cast(compare_scalar(arange_range(0, 6, 1, DType::i64), 4, "ge"), DType::f32))};
}

CKPTLAB_ORACLE_CASE(trilu) {
  const Tensor x = c.input("x");
  return {add(mul(trilu(x, 1, true), 2.0), trilu(x, -2, false))};
}

CKPTLAB_ORACLE_CASE(compare_scalar) {
  const Tensor att = c.input("att");
  const Tensor filled_att = masked_fill(att, compare_scalar(c.buffer("bias"), 0, "eq"),
                                        -std::numeric_limits<double>::infinity());
  return {add(softmax(filled_att, -1), cast(compare_scalar(att, 0.1, "gt"), DType::f32))};
}

CKPTLAB_ORACLE_CASE(ne) {
  const Tensor a = c.input("a"), b = c.input("b");
  return {where(not_equal(a, b), mul(a, 2.0), b)};
}

CKPTLAB_ORACLE_CASE(logical) {
  const Tensor x = c.input("x");
  const Tensor keep = logical_binary(
      compare_scalar(x, 0.5, "gt"),
      logical_binary(compare_scalar(x, 0.0, "lt"), compare_scalar(x, -0.5, "gt"), "and"), "or");
  return {where(keep, x, mul(x, 0.5))};
}

CKPTLAB_ORACLE_CASE(masked_fill) {
  const Tensor x = c.input("x");
  return {mul(masked_fill(x, compare_scalar(c.input("pad"), 0, "gt"), 0.25), x)};
}

CKPTLAB_ORACLE_CASE(masked_fill_inplace) {
  const Tensor x = c.input("x");
  Tensor bias = filled({3, 4}, 0, DType::f32);
  masked_fill_(bias, compare_scalar(x.detach(), 0, "gt"), -2.0);
  return {softmax(add(x, bias), -1)};
}

CKPTLAB_ORACLE_CASE(fill_inplace) {
  const Tensor x = c.input("x");
  Tensor mask = filled({4, 6}, 0, DType::f32);
  Tensor top = slice(slice(mask, 0, 0, 2, 1), 1, 3, 6, 1);
  fill_(top, 1.0);
  Tensor bottom = slice(slice(mask, 0, 2, 4, 1), 1, 0, 3, 1);
  fill_(bottom, 2.0);
  return {mul(x, mask)};
}

CKPTLAB_ORACLE_CASE(vector_norm) {
  const Tensor x = c.input("x");
  const Tensor n =
      hardtanh(vector_norm(x, 2, {-1}, true), 1e-12, std::numeric_limits<double>::infinity());
  return {add(div(x, expand(n, x.shape())), unsqueeze(vector_norm(x, 3, {1}, false), 1))};
}
