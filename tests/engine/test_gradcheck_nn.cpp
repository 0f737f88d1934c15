#include <omp.h>

#include <QtTest>

#include <cmath>
#include <limits>

#include "engine/ops/ops.hpp"
#include "support/gradcheck.hpp"

using namespace ckpt;
using ckpt::testing::Fn;
using ckpt::testing::gradcheck;
using ckpt::testing::random_leaf;

Q_DECLARE_METATYPE(ckpt::testing::Fn)
Q_DECLARE_METATYPE(ckpt::TensorList)

namespace {
Tensor L(Shape s, std::uint64_t seed, double lo = -1, double hi = 1) {
  return random_leaf(s, seed, lo, hi);
}
// A constant (no grad) of the same values, for running statistics and targets.
Tensor C(Shape s, std::uint64_t seed, double lo = -1, double hi = 1) {
  return random_leaf(s, seed, lo, hi).detach();
}
Tensor I(std::vector<std::int64_t> v, Shape s) {
  return Tensor::from_vector(v, s);
}
}  // namespace

// The neural-network ops' backward against central finite differences in f64: one row per op
// and shape case (strides, padding, dilation, groups, reductions, non-contiguous inputs).
class TestGradcheckNn : public QObject {
  Q_OBJECT
 private slots:
  void ops_data() {
    QTest::addColumn<Fn>("f");
    QTest::addColumn<TensorList>("inputs");
    auto row = [](const char* name, Fn f, TensorList in) { QTest::newRow(name) << f << in; };

    // conv2d
    row("conv2d", [](const TensorList& x) { return conv2d(x[0], x[1], x[2]); },
        {L({2, 3, 5, 5}, 1), L({4, 3, 3, 3}, 2), L({4}, 3)});
    row("conv2d stride 2 pad 1",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], x[2], {2, 2}, {1, 1});
        },
        {L({2, 3, 6, 5}, 4), L({4, 3, 3, 3}, 5), L({4}, 6)});
    row("conv2d asymmetric stride pad dilation",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], Tensor(), {1, 2}, {2, 1}, {2, 1});
        },
        {L({1, 2, 6, 7}, 7), L({3, 2, 3, 2}, 8)});
    row("conv2d groups 2",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1}, {1, 1}, 2);
        },
        {L({2, 4, 4, 4}, 9), L({6, 2, 3, 3}, 10), L({6}, 11)});
    row("conv2d depthwise",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], Tensor(), {2, 2}, {1, 1}, {1, 1}, 3);
        },
        {L({2, 3, 5, 5}, 12), L({3, 1, 3, 3}, 13)});
    row("conv2d 1x1 single image", [](const TensorList& x) { return conv2d(x[0], x[1], x[2]); },
        {L({1, 3, 4, 5}, 14), L({2, 3, 1, 1}, 15), L({2}, 16)});
    row("conv2d 1x1 batch", [](const TensorList& x) { return conv2d(x[0], x[1], Tensor()); },
        {L({3, 3, 4, 5}, 17), L({2, 3, 1, 1}, 18)});
    row("conv2d unbatched",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1});
        },
        {L({2, 4, 4}, 19), L({3, 2, 3, 3}, 20), L({3}, 21)});
    row("conv2d transposed-view input",
        [](const TensorList& x) { return conv2d(transpose(x[0], 2, 3), x[1], Tensor()); },
        {L({1, 2, 5, 4}, 22), L({2, 2, 2, 2}, 23)});
    row("conv2d input only needs grad",
        [](const TensorList& x) {
          return conv2d(x[0], C({2, 2, 3, 3}, 25), Tensor(), {1, 1}, {1, 1});
        },
        {L({1, 2, 4, 4}, 24)});

    // >= 64 output pixels per image: the per-image GEMM path (images split across threads)
    row("conv2d per-image groups bias",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1}, {1, 1}, 2);
        },
        {L({3, 2, 9, 8}, 26), L({4, 1, 3, 3}, 27), L({4}, 28)});
    row("conv2d per-image pointwise", [](const TensorList& x) { return conv2d(x[0], x[1], x[2]); },
        {L({2, 3, 8, 8}, 29), L({2, 3, 1, 1}, 290), L({2}, 291)});
    row("conv2d per-image stride 2 weight only",
        [](const TensorList& x) {
          return conv2d(C({2, 2, 17, 16}, 292), x[0], Tensor(), {2, 2}, {1, 1});
        },
        {L({3, 2, 3, 3}, 293)});
    // Planes of at least 256 output pixels take the per-image path.
    row("conv2d per-image 272 pixels groups bias",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1}, {1, 1}, 2);
        },
        {L({2, 2, 16, 17}, 294), L({4, 1, 3, 3}, 295), L({4}, 296)});
    // Few pixels against a wide weight: the input gradient as dY^T W into transposed columns.
    row("conv2d transposed columns stride 2 batch 1",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], x[2], {2, 2}, {1, 1});
        },
        {L({1, 5, 5, 7}, 297), L({7, 5, 3, 3}, 298), L({7}, 299)});
    row("conv2d transposed columns groups 3 dilation",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], Tensor(), {1, 2}, {2, 1}, {2, 1}, 3);
        },
        {L({2, 6, 3, 4}, 300), L({9, 2, 3, 2}, 301)});
    row("conv2d transposed columns 2x2 plane 17 channels",
        [](const TensorList& x) {
          return conv2d(x[0], x[1], Tensor(), {1, 1}, {1, 1});
        },
        {L({2, 17, 2, 2}, 302), L({5, 17, 3, 3}, 303)});

    // Winograd F(2x2, 3x3), forced (the automatic choice takes it only for wide channels): odd
    // sizes (partial tiles), every padding it takes (the input gradient runs with 2 - p),
    // asymmetric padding, batch 1, channel counts that fill no vector, one-sided gradients.
    auto winograd = [](std::array<std::int64_t, 2> pad, bool bias) -> Fn {
      return [pad, bias](const TensorList& x) {
        ConvAlgorithmScope scope(ConvAlgorithm::winograd);
        return conv2d(x[0], x[1], bias ? x[2] : Tensor(), {1, 1}, pad);
      };
    };
    row("conv2d winograd pad 1 odd sizes", winograd({1, 1}, true),
        {L({2, 3, 5, 7}, 300), L({4, 3, 3, 3}, 301), L({4}, 302)});
    row("conv2d winograd pad 0", winograd({0, 0}, false),
        {L({1, 2, 6, 5}, 303), L({3, 2, 3, 3}, 304)});
    row("conv2d winograd pad 2", winograd({2, 2}, true),
        {L({2, 3, 4, 3}, 305), L({2, 3, 3, 3}, 306), L({2}, 307)});
    row("conv2d winograd pad (0, 2)", winograd({0, 2}, false),
        {L({1, 2, 5, 4}, 308), L({3, 2, 3, 3}, 309)});
    row("conv2d winograd batch 1, 5 -> 7 channels", winograd({1, 1}, true),
        {L({1, 5, 4, 6}, 310), L({7, 5, 3, 3}, 311), L({7}, 312)});
    row("conv2d winograd 3x3 input (one tile)", winograd({1, 1}, false),
        {L({3, 2, 3, 3}, 313), L({2, 2, 3, 3}, 314)});
    row("conv2d winograd unbatched", winograd({1, 1}, true),
        {L({2, 5, 4}, 315), L({3, 2, 3, 3}, 316), L({3}, 317)});
    row("conv2d winograd weight only",
        [](const TensorList& x) {
          ConvAlgorithmScope scope(ConvAlgorithm::winograd);
          return conv2d(C({2, 3, 7, 6}, 318), x[0], Tensor(), {1, 1}, {1, 1});
        },
        {L({4, 3, 3, 3}, 319)});
    row("conv2d winograd input only, non-contiguous",
        [](const TensorList& x) {
          ConvAlgorithmScope scope(ConvAlgorithm::winograd);
          return conv2d(transpose(x[0], 2, 3), C({3, 2, 3, 3}, 321), Tensor(), {1, 1}, {1, 1});
        },
        {L({2, 2, 5, 6}, 320)});

    // pooling
    row("max_pool2d 2x2",
        [](const TensorList& x) {
          return max_pool2d(x[0], {2, 2}, {2, 2});
        },
        {L({2, 2, 4, 6}, 30)});
    row("max_pool2d 3x3 s2 p1",
        [](const TensorList& x) {
          return max_pool2d(x[0], {3, 3}, {2, 2}, {1, 1});
        },
        {L({1, 2, 7, 6}, 31)});
    row("max_pool2d dilation ceil",
        [](const TensorList& x) {
          return max_pool2d(x[0], {2, 3}, {2, 1}, {1, 1}, {2, 1}, true);
        },
        {L({1, 1, 7, 6}, 32)});
    row("max_pool2d unbatched",
        [](const TensorList& x) {
          return max_pool2d(x[0], {2, 2}, {1, 1});
        },
        {L({2, 3, 3}, 33)});
    row("avg_pool2d 2x2",
        [](const TensorList& x) {
          return avg_pool2d(x[0], {2, 2}, {2, 2});
        },
        {L({2, 2, 4, 4}, 34)});
    row("avg_pool2d pad count_include_pad",
        [](const TensorList& x) {
          return avg_pool2d(x[0], {3, 3}, {2, 2}, {1, 1});
        },
        {L({1, 2, 5, 6}, 35)});
    row("avg_pool2d pad exclude ceil",
        [](const TensorList& x) {
          return avg_pool2d(x[0], {3, 2}, {2, 2}, {1, 1}, true, false);
        },
        {L({1, 2, 6, 5}, 36)});
    row("adaptive_avg_pool2d 1x1",
        [](const TensorList& x) {
          return adaptive_avg_pool2d(x[0], {1, 1});
        },
        {L({2, 3, 4, 5}, 37)});
    row("adaptive_avg_pool2d 3x2 overlapping",
        [](const TensorList& x) {
          return adaptive_avg_pool2d(x[0], {3, 2});
        },
        {L({2, 2, 7, 5}, 38)});

    // normalisation
    row("batch_norm train",
        [](const TensorList& x) {
          return batch_norm(x[0], x[1], x[2], C({3}, 42), C({3}, 43, 0.5, 2), true);
        },
        {L({2, 3, 4, 3}, 39), L({3}, 40), L({3}, 41)});
    row("batch_norm train 2-d no affine no stats",
        [](const TensorList& x) {
          return batch_norm(x[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
        },
        {L({5, 4}, 44)});
    row("batch_norm eval",
        [](const TensorList& x) {
          return batch_norm(x[0], x[1], x[2], C({3}, 48), C({3}, 49, 0.5, 2), false);
        },
        {L({2, 3, 2, 2}, 45), L({3}, 46), L({3}, 47)});
    row("layer_norm", [](const TensorList& x) { return layer_norm(x[0], {5}, x[1], x[2]); },
        {L({3, 5}, 50), L({5}, 51), L({5}, 52)});
    row("layer_norm 2 dims no affine",
        [](const TensorList& x) {
          return layer_norm(x[0], {3, 4}, Tensor(), Tensor());
        },
        {L({2, 3, 4}, 53)});
    row("layer_norm weight only",
        [](const TensorList& x) { return layer_norm(transpose(x[0], 0, 1), {3}, x[1], Tensor()); },
        {L({3, 4}, 54), L({3}, 55)});

    // softmax and losses
    row("softmax last", [](const TensorList& x) { return softmax(x[0], -1); }, {L({3, 5}, 60)});
    row("softmax middle", [](const TensorList& x) { return softmax(x[0], 1); }, {L({2, 4, 3}, 61)});
    row("log_softmax", [](const TensorList& x) { return log_softmax(x[0], 1); }, {L({3, 5}, 62)});
    row("log_softmax dim 0", [](const TensorList& x) { return log_softmax(x[0], 0); },
        {L({4, 3}, 63)});
    row("cross_entropy mean",
        [](const TensorList& x) {
          return cross_entropy(x[0], I({0, 2, 4, 1}, {4}));
        },
        {L({4, 5}, 64)});
    row("cross_entropy sum ignore_index",
        [](const TensorList& x) {
          return cross_entropy(x[0], I({0, -100, 4, 1}, {4}), "sum");
        },
        {L({4, 5}, 65)});
    row("cross_entropy none",
        [](const TensorList& x) {
          return cross_entropy(x[0], I({3, 2, 0}, {3}), "none");
        },
        {L({3, 4}, 66)});
    row("cross_entropy 4-d",
        [](const TensorList& x) {
          return cross_entropy(x[0], I({0, 1, 2, 0, 2, 1, 1, 0}, {2, 2, 2}));
        },
        {L({2, 3, 2, 2}, 67)});
    row("cross_entropy 3-d none",
        [](const TensorList& x) {
          return cross_entropy(x[0], I({0, 1, 2, 2, 1, 0}, {2, 3}), "none");
        },
        {L({2, 3, 3}, 68)});
    row("cross_entropy unbatched",
        [](const TensorList& x) { return cross_entropy(x[0], I({2}, {})); }, {L({4}, 69)});
    row("nll_loss",
        [](const TensorList& x) {
          return nll_loss(x[0], I({1, 0, 2}, {3}));
        },
        {L({3, 3}, 70)});
    row("mse_loss mean", [](const TensorList& x) { return mse_loss(x[0], x[1]); },
        {L({3, 4}, 71), L({3, 4}, 72)});
    row("mse_loss sum",
        [](const TensorList& x) {
          return mse_loss(x[0], C({3, 4}, 74), "sum");
        },
        {L({3, 4}, 73)});
    row("mse_loss none", [](const TensorList& x) { return mse_loss(x[0], x[1], "none"); },
        {L({2, 3}, 75), L({2, 3}, 76)});

    // dropout (a fresh generator per call: the same mask every evaluation)
    row("dropout",
        [](const TensorList& x) {
          Generator g(7);
          return dropout(x[0], 0.4, true, &g);
        },
        {L({4, 6}, 80)});
    row("dropout p=1",
        [](const TensorList& x) {
          Generator g(7);
          return dropout(x[0], 1.0, true, &g);
        },
        {L({3}, 81)});

    // scaled_dot_product_attention, both kernels: the math one's decomposed ops and the
    // efficient one's own backward (probabilities recomputed from the log-sum-exp); the scale
    // where the graph had it, masks added (with a gradient) or filled, dropout from a fresh
    // generator per call.
    const auto attention = [](AttentionOptions o, AttentionKernel k, bool drop) {
      return [o, k, drop](const TensorList& x) {
        Generator g(11);
        GeneratorScope scope(g);
        AttentionOptions opts = o;
        if (drop) opts.dropout = 0.3;
        Tensor mask;
        if (o.mask == AttentionMask::add) mask = x[3];
        if (o.mask == AttentionMask::fill)
          mask = Tensor::from_vector(
              std::vector<std::int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0}, {3, 5});
        return scaled_dot_product_attention(x[0], x[1], x[2], mask, opts, k);
      };
    };
    AttentionOptions on_query, on_scores_masked, both_filled;
    on_query.query = {AttentionScale::Op::div, 2.0};
    on_scores_masked.scores = {AttentionScale::Op::mul, 0.5};
    on_scores_masked.mask = AttentionMask::add;
    both_filled.query = both_filled.key = {AttentionScale::Op::mul, 0.7};
    both_filled.mask = AttentionMask::fill;
    const TensorList qkv{L({2, 3, 4}, 84), L({2, 4, 5}, 85), L({2, 5, 3}, 86)};
    TensorList qkv_mask = qkv;
    qkv_mask.push_back(L({3, 5}, 87));
    row("scaled_dot_product_attention math", attention(on_query, AttentionKernel::math, false),
        qkv);
    row("scaled_dot_product_attention math masked",
        attention(on_scores_masked, AttentionKernel::math, false), qkv_mask);
    row("scaled_dot_product_attention math dropout",
        attention(both_filled, AttentionKernel::math, true), qkv);
    row("scaled_dot_product_attention efficient",
        attention(on_query, AttentionKernel::efficient, false), qkv);
    row("scaled_dot_product_attention efficient masked",
        attention(on_scores_masked, AttentionKernel::efficient, false), qkv_mask);
    row("scaled_dot_product_attention efficient filled dropout",
        attention(both_filled, AttentionKernel::efficient, true), qkv);

    // embedding (repeated indices accumulate)
    row("embedding",
        [](const TensorList& x) {
          return embedding(x[0], I({1, 3, 1, 0, 3, 3}, {2, 3}));
        },
        {L({5, 4}, 82)});

    // unary additions
    row("clamp", [](const TensorList& x) { return clamp(x[0], -0.5, 0.4); }, {L({4, 5}, 83)});
    row("clamp min only", [](const TensorList& x) { return clamp(x[0], 0.1, std::nullopt); },
        {L({4, 5}, 84)});
    row("clamp max only", [](const TensorList& x) { return clamp(x[0], std::nullopt, -0.1); },
        {L({4, 5}, 85)});
    row("hardtanh", [](const TensorList& x) { return hardtanh(x[0]); }, {L({4, 5}, 86, -2, 2)});
    row("relu6", [](const TensorList& x) { return hardtanh(x[0], 0, 6); }, {L({4, 5}, 87, -3, 8)});
    row("erf", [](const TensorList& x) { return erf(x[0]); }, {L({4, 5}, 88, -2, 2)});

    // matmul's decomposition (PyTorch 1.13's fold / bmm paths)
    row("matmul dot", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({4}, 100), L({4}, 101)});
    row("matmul 1d @ 3d", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({4}, 102), L({2, 4, 3}, 103)});
    row("matmul 2d @ 3d", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({3, 4}, 104), L({2, 4, 5}, 105)});
    row("matmul 3d @ 1d", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({2, 3, 4}, 106), L({4}, 107)});
    row("matmul transposed 3d @ 2d (bmm, no fold)",
        [](const TensorList& x) { return matmul(transpose(x[0], 1, 2), x[1]); },
        {L({2, 4, 3}, 108), L({4, 5}, 109)});
    row("matmul 4d attention",
        [](const TensorList& x) {
          return matmul(transpose(x[0], 1, 2), transpose(transpose(x[1], 1, 2), -1, -2));
        },
        {L({2, 3, 2, 4}, 110), L({2, 3, 2, 4}, 111)});
    row("matmul broadcast 4d @ 3d", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({2, 2, 3, 4}, 112), L({2, 4, 5}, 113)});

    // in-place
    row("relu_",
        [](const TensorList& x) {
          Tensor y = mul(x[0], 1.5);
          relu_(y);
          return mul(y, x[0]);
        },
        {L({3, 4}, 90)});
    row("add_ broadcast",
        [](const TensorList& x) {
          Tensor y = mul(x[0], 2.0);
          add_(y, x[1]);
          return mul(y, y);
        },
        {L({3, 4}, 91), L({4}, 92)});
  }

  void ops() {
    QFETCH(Fn, f);
    QFETCH(TensorList, inputs);
    const auto r = gradcheck(f, inputs);
    QVERIFY2(r.ok(),
             qPrintable(QString::fromStdString(r.where) +
                        QString(" (abs %1, rel %2)").arg(r.max_abs_error).arg(r.max_rel_error)));
  }

  // max_pool2d's vectorised kernel against the textbook loop, with ties (small integers),
  // NaN, -inf and windows clipped by padding: same values and the same argmax (seen through
  // the backward of a gradient that differs for every output), in f32 and f64, 1 and 2 threads.
  void maxPoolMatchesReference() {
    struct Case {
      Shape shape;
      std::array<std::int64_t, 2> k, s, p, d;
      bool ceil;
    };
    const std::vector<Case> cases = {
        {{2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
        {{1, 2, 32, 32}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
        {{1, 2, 7, 23}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
        {{2, 1, 11, 13}, {3, 2}, {3, 1}, {1, 1}, {1, 2}, true},
        {{1, 1, 6, 17}, {5, 5}, {1, 3}, {2, 2}, {1, 1}, false},
        {{1, 1, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {2, 2}, true},
    };
    auto make = [](const std::vector<double>& v, const Shape& shape, DType dt) {
      return dt == DType::f64 ? Tensor::from_vector(v, shape)
                              : Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
    };
    const int saved = omp_get_max_threads();
    for (const Case& c : cases) {
      const std::int64_t n = c.shape[0] * c.shape[1], h = c.shape[2], w = c.shape[3];
      std::vector<double> xv(static_cast<std::size_t>(n * h * w));
      for (std::size_t i = 0; i < xv.size(); ++i) {
        xv[i] = static_cast<double>((i * 7 + i / 5) % 5);  // many ties
        if (i % 29 == 3) xv[i] = std::nan("");
        if (i % 31 == 4) xv[i] = -std::numeric_limits<double>::infinity();
        if (i % 37 == 5) xv[i] = -0.0;
      }
      // Reference: PyTorch's loop (first strictly greater wins, NaN propagates).
      auto out_size = [&](std::int64_t in, int a) {
        const std::int64_t num = in + 2 * c.p[a] - c.d[a] * (c.k[a] - 1) - 1;
        std::int64_t o = (num + (c.ceil ? c.s[a] - 1 : 0)) / c.s[a] + 1;
        if (c.ceil && (o - 1) * c.s[a] >= in + c.p[a]) --o;
        return o;
      };
      const std::int64_t ho = out_size(h, 0), wo = out_size(w, 1);
      std::vector<double> ry, rdx(xv.size(), 0.0), gy(static_cast<std::size_t>(n * ho * wo));
      for (std::size_t i = 0; i < gy.size(); ++i) gy[i] = static_cast<double>(i + 1);
      for (std::int64_t pl = 0; pl < n; ++pl)
        for (std::int64_t oh = 0; oh < ho; ++oh)
          for (std::int64_t ow = 0; ow < wo; ++ow) {
            std::int64_t h0 = oh * c.s[0] - c.p[0], w0 = ow * c.s[1] - c.p[1];
            const std::int64_t h1 = std::min(h0 + (c.k[0] - 1) * c.d[0] + 1, h);
            const std::int64_t w1 = std::min(w0 + (c.k[1] - 1) * c.d[1] + 1, w);
            while (h0 < 0) h0 += c.d[0];
            while (w0 < 0) w0 += c.d[1];
            std::int64_t best = h0 * w + w0;
            double m = -std::numeric_limits<double>::infinity();
            for (std::int64_t ih = h0; ih < h1; ih += c.d[0])
              for (std::int64_t iw = w0; iw < w1; iw += c.d[1]) {
                const double v = xv[static_cast<std::size_t>(pl * h * w + ih * w + iw)];
                if (v > m || std::isnan(v)) {
                  m = v;
                  best = ih * w + iw;
                }
              }
            ry.push_back(m);
            rdx[static_cast<std::size_t>(pl * h * w + best)] +=
                gy[static_cast<std::size_t>((pl * ho + oh) * wo + ow)];
          }
      for (DType dt : {DType::f32, DType::f64})
        for (int threads : {1, 2}) {
          omp_set_num_threads(threads);
          Tensor x = make(xv, c.shape, dt);
          x.set_requires_grad(true);
          Tensor y = max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil);
          y.backward(make(gy, y.shape(), dt));
          const auto yv = y.to_vector(), dxv = x.grad().to_vector();
          QCOMPARE(yv.size(), ry.size());
          for (std::size_t i = 0; i < ry.size(); ++i) {
            const bool same = std::isnan(ry[i])
                                  ? std::isnan(yv[i])
                                  : yv[i] == ry[i] && std::signbit(yv[i]) == std::signbit(ry[i]);
            QVERIFY2(same, qPrintable(QString("case %1x%2 out %3: %4 vs %5")
                                          .arg(h)
                                          .arg(w)
                                          .arg(i)
                                          .arg(yv[i])
                                          .arg(ry[i])));
          }
          QVERIFY(dxv == rdx);
        }
    }
    omp_set_num_threads(saved);
  }

  // Convolutions big enough to split images across threads (per-thread column buffers and
  // weight-gradient partials) give the single-threaded results.
  void convThreadsAgree() {
    struct Result {
      std::vector<double> y, dx, dw, db;
    };
    auto run = [](int threads, std::array<std::int64_t, 2> stride) {
      omp_set_num_threads(threads);
      Tensor x = L({4, 16, 18, 18}, 200), w = L({32, 16, 3, 3}, 201), b = L({32}, 202);
      Tensor y = conv2d(x, w, b, stride, {1, 1});
      sum(mul(y, y)).backward();
      return Result{y.to_vector(), x.grad().to_vector(), w.grad().to_vector(),
                    b.grad().to_vector()};
    };
    const int saved = omp_get_max_threads();
    for (auto stride : {std::array<std::int64_t, 2>{1, 1}, {2, 2}}) {
      const Result one = run(1, stride), two = run(2, stride);
      auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
          if (std::abs(a[i] - b[i]) > 1e-9 * (1 + std::abs(a[i]))) return false;
        return true;
      };
      QVERIFY(close(one.y, two.y));
      QVERIFY(close(one.dx, two.dx));
      QVERIFY(close(one.dw, two.dw));
      QVERIFY(close(one.db, two.db));
    }
    omp_set_num_threads(saved);
  }
};

QTEST_APPLESS_MAIN(TestGradcheckNn)
#include "test_gradcheck_nn.moc"
