// Winograd F(2x2, 3x3) convolution against im2col + GEMM: the same outputs and gradients in f64
// (over the multi-block, multi-thread paths too), f32 rounding of the same order, and the
// automatic choice taking it only where it applies.

#include <omp.h>

#include <QtTest>

#include <cmath>

#include "engine/kernels/kernels.hpp"
#include "engine/ops/ops.hpp"
#include "support/gradcheck.hpp"

using namespace ckpt;
using ckpt::testing::random_leaf;

namespace {

struct Case {
  Shape x, w;
  std::array<std::int64_t, 2> pad;
  bool bias;
};

struct Result {
  std::vector<double> y, dx, dw, db;
};

Tensor leaf(const Shape& s, std::uint64_t seed, DType dtype) {
  Tensor t = random_leaf(s, seed);
  if (dtype == DType::f64) return t;
  Tensor c = cast_raw(t.detach(), dtype);
  c.set_requires_grad(true);
  return c;
}

Result run(const Case& c, ConvAlgorithm algorithm, DType dtype) {
  ConvAlgorithmScope scope(algorithm);
  Tensor x = leaf(c.x, 1, dtype), w = leaf(c.w, 2, dtype);
  Tensor b = c.bias ? leaf({c.w[0]}, 3, dtype) : Tensor();
  Tensor y = conv2d(x, w, b, {1, 1}, c.pad);
  // A non-uniform output gradient, so that every tap's weighting differs.
  Tensor gy = leaf(y.shape(), 4, dtype).detach();
  sum(mul(y, gy)).backward();
  return {y.to_vector(), x.grad().to_vector(), w.grad().to_vector(),
          c.bias ? b.grad().to_vector() : std::vector<double>{}};
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace

class TestWinograd : public QObject {
  Q_OBJECT
 private slots:
  void matchesIm2colInDouble_data() {
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("which");
    for (int t : {1, 2})
      for (int k = 0; k < 4; ++k)
        QTest::newRow(qPrintable(QString("threads %1 case %2").arg(t).arg(k))) << t << k;
  }
  void matchesIm2colInDouble() {
    QFETCH(int, threads);
    QFETCH(int, which);
    // Big enough to be split into several blocks of images and run on two threads.
    const Case cases[] = {
        {{9, 16, 18, 17}, {24, 16, 3, 3}, {1, 1}, true},  // odd width: partial tiles
        {{5, 20, 9, 8}, {12, 20, 3, 3}, {0, 2}, false},   // asymmetric padding
        {{3, 32, 6, 6}, {40, 32, 3, 3}, {2, 2}, true},    // the input gradient without padding
        {{1, 24, 31, 30}, {8, 24, 3, 3}, {1, 1}, false},  // one image
    };
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    const Case& c = cases[which];
    const Result ref = run(c, ConvAlgorithm::im2col, DType::f64);
    const Result win = run(c, ConvAlgorithm::winograd, DType::f64);
    omp_set_num_threads(saved);
    QVERIFY(max_abs_diff(ref.y, win.y) <= 1e-11 * (1 + max_abs(ref.y)));
    QVERIFY(max_abs_diff(ref.dx, win.dx) <= 1e-11 * (1 + max_abs(ref.dx)));
    QVERIFY(max_abs_diff(ref.dw, win.dw) <= 1e-11 * (1 + max_abs(ref.dw)));
    QVERIFY(max_abs_diff(ref.db, win.db) <= 1e-11 * (1 + max_abs(ref.db)));
  }

  // In f32, Winograd's error against an f64 reference stays of the order of im2col's.
  void float32ErrorLikeIm2col() {
    const Case c{{4, 64, 16, 16}, {64, 64, 3, 3}, {1, 1}, true};  // a ResNet stage-1 layer
    const Result ref = run(c, ConvAlgorithm::im2col, DType::f64);
    const Result gemm = run(c, ConvAlgorithm::im2col, DType::f32);
    const Result win = run(c, ConvAlgorithm::winograd, DType::f32);
    for (auto [r, g, w, name] : {std::tuple{&ref.y, &gemm.y, &win.y, "y"},
                                 {&ref.dx, &gemm.dx, &win.dx, "dx"},
                                 {&ref.dw, &gemm.dw, &win.dw, "dw"}}) {
      const double e_gemm = max_abs_diff(*r, *g), e_win = max_abs_diff(*r, *w);
      qInfo("%s: max |error| im2col %.3g, winograd %.3g (max |value| %.3g)", name, e_gemm, e_win,
            max_abs(*r));
      QVERIFY2(e_win <= 4 * e_gemm + 1e-7 * max_abs(*r), name);
      QVERIFY2(e_win <= 1e-5 * max_abs(*r), name);
    }
  }

  // Forcing Winograd where it does not apply (stride 2, 5x5, dilation, groups) falls back to
  // im2col with the same results, and the automatic choice gives the same values as either.
  void forcedWhereItDoesNotApplyFallsBack() {
    Tensor x = random_leaf({2, 4, 9, 9}, 10), w = random_leaf({4, 4, 3, 3}, 11);
    Tensor w5 = random_leaf({4, 4, 5, 5}, 12), wg = random_leaf({4, 2, 3, 3}, 13);
    auto both = [](auto f) {
      Tensor a, b;
      {
        ConvAlgorithmScope s(ConvAlgorithm::im2col);
        a = f();
      }
      {
        ConvAlgorithmScope s(ConvAlgorithm::winograd);
        b = f();
      }
      return max_abs_diff(a.to_vector(), b.to_vector());
    };
    QCOMPARE(both([&] { return conv2d(x, w, Tensor(), {2, 2}, {1, 1}); }), 0.0);
    QCOMPARE(both([&] { return conv2d(x, w5, Tensor(), {1, 1}, {2, 2}); }), 0.0);
    QCOMPARE(both([&] { return conv2d(x, w, Tensor(), {1, 1}, {2, 2}, {2, 2}); }), 0.0);
    QCOMPARE(both([&] { return conv2d(x, wg, Tensor(), {1, 1}, {1, 1}, {1, 1}, 2); }), 0.0);
    QCOMPARE(both([&] { return conv2d(x, w, Tensor(), {1, 1}, {3, 3}); }), 0.0);  // padding 3
    QCOMPARE(conv_algorithm(), ConvAlgorithm::automatic);
    Tensor automatic = conv2d(x, w, Tensor(), {1, 1}, {1, 1});
    ConvAlgorithmScope s(ConvAlgorithm::im2col);
    QVERIFY(max_abs_diff(automatic.to_vector(),
                         conv2d(x, w, Tensor(), {1, 1}, {1, 1}).to_vector()) < 1e-12);
  }
};

QTEST_APPLESS_MAIN(TestWinograd)
#include "test_winograd.moc"
