// C++ halves of the model-block oracle cases (cases_models.py).
#include <cmath>

#include "engine/ops/ops.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;
using oracle::OracleCase;

namespace {

Tensor bn(OracleCase& c, const std::string& p, const Tensor& x) {
  return batch_norm(x, c.param(p + "_w"), c.param(p + "_b"), c.buffer(p + "_rm"),
                    c.buffer(p + "_rv"), true, 0.1, 1e-5);
}

Tensor conv(OracleCase& c, const std::string& name, const Tensor& x, std::int64_t stride,
            std::int64_t pad, const Tensor& bias = Tensor()) {
  return conv2d(x, c.param(name), bias, {stride, stride}, {pad, pad});
}

Tensor basic_block(OracleCase& c, const Tensor& x, bool downsample, std::int64_t stride,
                   const std::string& p) {
  Tensor out = conv(c, p + "_conv1", x, stride, 1);
  out = bn(c, p + "_bn1", out);
  relu_(out);
  out = conv(c, p + "_conv2", out, 1, 1);
  out = bn(c, p + "_bn2", out);
  Tensor identity = x;
  if (downsample) identity = bn(c, p + "_down_bn", conv(c, p + "_down", x, stride, 0));
  add_(out, identity);
  return relu_(out);
}

}  // namespace

CKPTLAB_ORACLE_CASE(conv_bn_relu) {
  Tensor h = c.input("x");
  h = relu(bn(c, "bn1", conv(c, "conv1", h, 1, 1)));
  h = relu(bn(c, "bn2", conv(c, "conv2", h, 1, 1)));
  return {max_pool2d(h, {2, 2}, {2, 2})};
}

CKPTLAB_ORACLE_CASE(conv_bn_relu_inplace) {
  Tensor h = c.input("x");
  h = bn(c, "bn1", conv(c, "conv1", h, 1, 1, c.param("b1")));
  relu_(h);
  h = bn(c, "bn2", conv(c, "conv2", h, 1, 1));
  return {relu_(h)};
}

CKPTLAB_ORACLE_CASE(resnet_basic_block) {
  return {basic_block(c, c.input("x"), false, 1, "block")};
}

CKPTLAB_ORACLE_CASE(resnet_basic_block_downsample) {
  Tensor stem = relu(conv(c, "stem", c.input("x"), 1, 1));
  return {basic_block(c, stem, true, 2, "block")};
}

CKPTLAB_ORACLE_CASE(densenet_layer) {
  const TensorList feats{c.input("x0"), c.input("x1")};
  Tensor h = bn(c, "norm1", cat(feats, 1));
  relu_(h);
  h = conv(c, "conv1", h, 1, 0);
  h = bn(c, "norm2", h);
  relu_(h);
  Tensor fresh = conv(c, "conv2", h, 1, 1);
  return {cat({feats[0], feats[1], fresh}, 1)};
}

CKPTLAB_ORACLE_CASE(lstm_cell_8_steps) {
  const Tensor x = c.input("x");
  Tensor h = c.input("h0");
  Tensor cell = c.input("c0");
  const std::int64_t steps = x.shape()[0], hidden = h.shape()[1];
  TensorList hs;
  for (std::int64_t t = 0; t < steps; ++t) {
    const Tensor xt = squeeze(slice(x, 0, t, t + 1), 0);
    Tensor gates = add(linear(xt, c.param("w_ih"), c.param("b_ih")),
                       linear(h, c.param("w_hh"), c.param("b_hh")));
    auto chunk = [&](std::int64_t k) { return slice(gates, 1, k * hidden, (k + 1) * hidden); };
    const Tensor i = sigmoid(chunk(0)), f = sigmoid(chunk(1)), g = tanh(chunk(2)),
                 o = sigmoid(chunk(3));
    cell = add(mul(f, cell), mul(i, g));
    h = mul(o, tanh(cell));
    hs.push_back(unsqueeze(h, 0));
  }
  return {cat(hs, 0), cell};
}

CKPTLAB_ORACLE_CASE(transformer_block) {
  Tensor x = c.input("x");
  const Tensor mask = c.input("mask");
  const std::int64_t batch = x.shape()[0], seq = x.shape()[1], dim = x.shape()[2], heads = 2;
  const std::int64_t dh = dim / heads;
  auto lin = [&](const std::string& name, const Tensor& t) {
    return linear(t, c.param(name + "_w"), c.param(name + "_b"));
  };
  auto ln = [&](const std::string& name, const Tensor& t) {
    return layer_norm(t, {dim}, c.param(name + "_w"), c.param(name + "_b"));
  };
  auto heads_of = [&](const Tensor& t) {
    return transpose(view(t, {batch, seq, heads, dh}), 1, 2);
  };
  const Tensor qkv = lin("qkv", ln("ln1", x));
  const Tensor q = heads_of(slice(qkv, 2, 0, dim));
  const Tensor k = heads_of(slice(qkv, 2, dim, 2 * dim));
  const Tensor v = heads_of(slice(qkv, 2, 2 * dim, 3 * dim));
  Tensor att = mul(matmul(q, transpose(k, -2, -1)), 1.0 / std::sqrt(static_cast<double>(dh)));
  att = softmax(add(att, mask), -1);
  att = dropout(att, 0.0, true);
  Tensor y = view(contiguous(transpose(matmul(att, v), 1, 2)), {batch, seq, dim});
  y = lin("proj", y);
  x = add(x, dropout(y, 0.0, true));
  Tensor m = lin("fc_out", gelu(lin("fc", ln("ln2", x))));
  return {add(x, dropout(m, 0.0, true))};
}
