// C++ halves of the autocast oracle cases (cases_autocast.py): each op runs through its op-table
// row (run_op), where autocast applies, inside an AutocastScope with PyTorch 1.13's CPU rules.
#include <cmath>
#include <string>

#include "engine/ops/autocast.hpp"
#include "engine/ops/ops.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;
using oracle::OracleCase;

namespace {

// torch.autocast("cpu", dtype=torch.bfloat16)
AutocastScope autocast() {
  return AutocastScope(AutocastState{true, DType::bf16, Device::cpu});
}

// The op `type` through its row, as a model's node runs.
Tensor op(const std::string& type, const TensorList& inputs, const Attributes& attrs = {}) {
  const OpSchema* row = OpTable::instance().find(type);
  if (!row) throw std::logic_error("no op " + type);
  static const std::string name = "case";
  return run_op(*row, OpCall{name, type, attrs}, inputs).at(0);
}

Tensor linear_op(OracleCase& c, const std::string& name, const Tensor& x, bool bias = true) {
  TensorList in{x, c.param(name + "_w")};
  if (bias) in.push_back(c.param(name + "_b"));
  return op("linear", in);
}

Tensor as_float(const Tensor& t) {
  return cast(t, DType::f32);  // `.float()`, outside the scope as in the Python half
}

}  // namespace

CKPTLAB_ORACLE_CASE(ac_linear) {
  Tensor y;
  {
    auto scope = autocast();
    y = linear_op(c, "fc", c.input("x"));
  }
  return {as_float(y)};
}

CKPTLAB_ORACLE_CASE(ac_linear_3d) {
  Tensor y;
  {
    auto scope = autocast();
    y = linear_op(c, "fc", c.input("x"));
  }
  return {as_float(y)};
}

CKPTLAB_ORACLE_CASE(ac_shared_weight) {
  Tensor y;
  {
    auto scope = autocast();
    const Tensor h = linear_op(c, "fc", c.input("x"));
    y = linear_op(c, "fc", op("relu", {h}));
  }
  return {as_float(y)};
}

CKPTLAB_ORACLE_CASE(ac_conv_bn_relu_pool) {
  Tensor h;
  {
    auto scope = autocast();
    h = op("conv", {c.input("x"), c.param("conv_w")}, {{"padding", std::int64_t{1}}});
    h = op("batch_norm",
           {h, c.param("bn_w"), c.param("bn_b"), c.buffer("bn_rm"), c.buffer("bn_rv")},
           {{"momentum", 0.1}, {"eps", 1e-5}});
    h = op("relu", {h});
    h = op("max_pool2d", {h}, {{"kernel", std::int64_t{2}}});
    h = op("adaptive_avg_pool2d", {h});
  }
  return {as_float(h)};
}

CKPTLAB_ORACLE_CASE(ac_attention) {
  Tensor y;
  {
    auto scope = autocast();
    const Tensor x = c.input("x");
    const Tensor q = linear_op(c, "q", x), k = linear_op(c, "k", x), v = linear_op(c, "v", x);
    const Tensor kt =
        op("transpose", {k}, {{"dim0", std::int64_t{-2}}, {"dim1", std::int64_t{-1}}});
    const Tensor s = op("mul_scalar", {op("matmul", {q, kt})}, {{"value", 0.25}});
    const Tensor a = op("softmax", {op("add", {s, c.input("mask")})}, {{"dim", std::int64_t{-1}}});
    y = op("matmul", {a, v});
  }
  return {as_float(y)};
}

CKPTLAB_ORACLE_CASE(ac_softmax_dropout) {
  Tensor h;
  {
    auto scope = autocast();
    h = op("softmax", {linear_op(c, "fc", c.input("x"))}, {{"dim", std::int64_t{-1}}});
    h = op("dropout", {h}, {{"p", 0.25}});  // the harness's generator: PyTorch's seed
  }
  return {as_float(h)};
}

CKPTLAB_ORACLE_CASE(ac_gelu_mlp) {
  Tensor y;
  {
    auto scope = autocast();
    y = linear_op(c, "fc2", op("gelu", {linear_op(c, "fc1", c.input("x"))}));
  }
  return {as_float(y)};
}

CKPTLAB_ORACLE_CASE(ac_residual_layer_norm) {
  auto scope = autocast();
  const Tensor x = c.input("x");
  const Tensor h = op("add", {x, linear_op(c, "fc", x)});
  return {op("layer_norm", {h, c.param("ln_w"), c.param("ln_b")},
             {{"normalized_shape", std::vector<std::int64_t>{8}}})};
}

CKPTLAB_ORACLE_CASE(ac_cross_entropy) {
  auto scope = autocast();
  return {op("cross_entropy", {linear_op(c, "fc", c.input("x")), c.input("t")})};
}

CKPTLAB_ORACLE_CASE(ac_mse) {
  auto scope = autocast();
  return {op("mse_loss", {linear_op(c, "fc", c.input("x")), c.input("y")})};
}

CKPTLAB_ORACLE_CASE(ac_cat_promote) {
  auto scope = autocast();
  return {op("cat", {linear_op(c, "fc", c.input("x")), c.input("z")}, {{"dim", std::int64_t{1}}})};
}

CKPTLAB_ORACLE_CASE(ac_embedding) {
  Tensor y;
  {
    auto scope = autocast();
    y = linear_op(c, "fc", op("embedding", {c.param("table"), c.input("idx")}));
  }
  return {as_float(y)};
}

CKPTLAB_ORACLE_CASE(ac_conv_transpose) {
  auto scope = autocast();
  const Tensor h = op("conv", {c.input("x"), c.param("conv_w")}, {{"padding", std::int64_t{1}}});
  return {op("conv_transpose", {h, c.param("convt_w")},
             {{"stride", std::int64_t{2}},
              {"padding", std::int64_t{1}},
              {"output_padding", std::int64_t{1}}})};
}
