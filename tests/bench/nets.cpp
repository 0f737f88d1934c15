#include "nets.hpp"

#include <cmath>
#include <memory>

#include "engine/tensor/generator.hpp"

namespace ckpt::bench {

namespace {

Tensor randn(const Shape& s, double scale, Generator& g) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(s)));
  for (auto& x : v) x = static_cast<float>(g.normal() * scale);
  return Tensor::from_vector(v, s);
}

Tensor param(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

Tensor targets(std::int64_t n, std::int64_t classes, Generator& g) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<std::int64_t>(g.next_u32() % classes);
  return Tensor::from_vector(v, {n});
}

void clear_grads(const TensorList& params) {
  for (const auto& p : params) const_cast<Tensor&>(p).set_grad(Tensor());
}

// FLOPs of one product of `macs` multiply-adds: forward, weight gradient, and the input
// gradient unless the layer's input is the (non-differentiable) data.
double fwd_bwd_flops(double macs, bool input_grad) {
  return 2 * macs * (input_grad ? 3 : 2);
}

}  // namespace

Net make_mlp() {
  CategoryScope as_params(MemoryCategory::parameter);
  auto g = std::make_shared<Generator>(0);
  Net net;
  net.name = "mlp";
  const double k = 1 / std::sqrt(1024.0);
  for (int i = 0; i < 4; ++i) {
    net.params.push_back(param(randn({1024, 1024}, k, *g)));
    net.params.push_back(param(randn({1024}, k, *g)));
    net.flops += fwd_bwd_flops(64.0 * 1024 * 1024, i > 0);
  }
  Tensor x, t;
  {
    CategoryScope as_input(MemoryCategory::input);
    x = randn({64, 1024}, 1, *g);
    t = targets(64, 1024, *g);
  }
  net.step = [p = net.params, x, t] {
    clear_grads(p);
    Tensor h = x;
    for (std::size_t i = 0; i < 4; ++i) {
      h = linear(h, p[2 * i], p[2 * i + 1]);
      if (i < 3) h = relu(h);
    }
    cross_entropy(h, t).backward();
  };
  return net;
}

Net make_resnet18() {
  struct Bn {
    Tensor w, b, rm, rv;
  };
  struct Block {
    Tensor w1, w2, down;
    Bn b1, b2, down_bn;
    std::int64_t stride;
  };
  struct Model {
    Tensor stem;
    Bn stem_bn;
    std::vector<Block> blocks;
    Tensor fc_w, fc_b, x, t;
  };
  CategoryScope as_params(MemoryCategory::parameter);
  Generator g(0);
  auto m = std::make_shared<Model>();
  Net net;
  net.name = "resnet18";
  std::int64_t hw = 64;  // spatial size at the current layer's input
  auto conv = [&](std::int64_t cout, std::int64_t cin, std::int64_t k, std::int64_t stride,
                  bool input_grad) {
    Tensor w =
        param(randn({cout, cin, k, k}, std::sqrt(2.0 / static_cast<double>(cin * k * k)), g));
    net.params.push_back(w);
    const std::int64_t pad = k / 2;
    const std::int64_t out = (hw + 2 * pad - k) / stride + 1;
    net.flops +=
        fwd_bwd_flops(8.0 * static_cast<double>(out * out * cout * cin * k * k), input_grad);
    return w;
  };
  auto bn = [&](std::int64_t ch) {
    Bn b{param(Tensor::ones({ch})), param(Tensor::zeros({ch})), Tensor::zeros({ch}),
         Tensor::ones({ch})};
    net.params.push_back(b.w);
    net.params.push_back(b.b);
    return b;
  };
  m->stem = conv(64, 3, 7, 2, false);
  m->stem_bn = bn(64);
  hw = 32 / 2;  // stem stride 2, max pool stride 2
  std::int64_t cin = 64;
  for (auto [cout, stride] :
       {std::pair<std::int64_t, std::int64_t>{64, 1}, {128, 2}, {256, 2}, {512, 2}}) {
    for (int b = 0; b < 2; ++b) {
      Block blk;
      blk.stride = b == 0 ? stride : 1;
      const std::int64_t in_hw = hw;
      blk.w1 = conv(cout, cin, 3, blk.stride, true);
      blk.b1 = bn(cout);
      hw = (hw + 2 - 3) / blk.stride + 1;
      blk.w2 = conv(cout, cout, 3, 1, true);
      blk.b2 = bn(cout);
      if (blk.stride != 1 || cin != cout) {
        const std::int64_t keep = hw;
        hw = in_hw;
        blk.down = conv(cout, cin, 1, blk.stride, true);
        blk.down_bn = bn(cout);
        hw = keep;
      }
      m->blocks.push_back(blk);
      cin = cout;
    }
  }
  const double k = 1 / std::sqrt(512.0);
  m->fc_w = param(randn({1000, 512}, k, g));
  m->fc_b = param(Tensor::zeros({1000}));
  net.params.push_back(m->fc_w);
  net.params.push_back(m->fc_b);
  net.flops += fwd_bwd_flops(8.0 * 1000 * 512, true);
  {
    CategoryScope as_input(MemoryCategory::input);
    m->x = randn({8, 3, 64, 64}, 1, g);
    m->t = targets(8, 1000, g);
  }
  net.step = [m, p = net.params] {
    clear_grads(p);
    auto norm = [](const Tensor& h, const Bn& b) {
      return batch_norm(h, b.w, b.b, b.rm, b.rv, true);
    };
    Tensor h = norm(conv2d(m->x, m->stem, Tensor(), {2, 2}, {3, 3}), m->stem_bn);
    relu_(h);
    h = max_pool2d(h, {3, 3}, {2, 2}, {1, 1});
    for (const auto& blk : m->blocks) {
      const std::array<std::int64_t, 2> s{blk.stride, blk.stride};
      Tensor out = norm(conv2d(h, blk.w1, Tensor(), s, {1, 1}), blk.b1);
      relu_(out);
      out = norm(conv2d(out, blk.w2, Tensor(), {1, 1}, {1, 1}), blk.b2);
      add_(out,
           blk.down.defined() ? norm(conv2d(h, blk.down, Tensor(), s, {0, 0}), blk.down_bn) : h);
      h = relu_(out);
    }
    h = flatten(adaptive_avg_pool2d(h, {1, 1}), 1);
    cross_entropy(linear(h, m->fc_w, m->fc_b), m->t).backward();
  };
  return net;
}

}  // namespace ckpt::bench
