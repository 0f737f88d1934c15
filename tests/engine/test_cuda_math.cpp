// The CUDA kernels' arithmetic (engine/cuda/*.cuh), compiled by g++ and checked on the CPU
// against the engine's own ops: what the GPU would compute is verified on machines without one.
#include <QtTest>
#include <cmath>
#include <vector>

#include "engine/cuda/elementwise.cuh"
#include "engine/cuda/gemm_tile.cuh"
#include "engine/cuda/softmax.cuh"
#include "engine/cuda/strided.cuh"
#include "engine/ops/ops.hpp"
#include "engine/tensor/generator.hpp"

using namespace ckpt;
namespace cm = ckpt::cuda_math;

namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed, double scale = 3.0) {
  Generator g(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>((g.uniform() * 2 - 1) * scale);
  return v;
}

// The tiled kernel's schedule run on the host: every block, every tile step, every thread.
std::vector<float> tiled_gemm(const std::vector<float>& a, const std::vector<float>& b, int m,
                              int n, int k) {
  std::vector<float> c(static_cast<std::size_t>(m) * n, 0.0f);
  const int brows = (m + cm::kTile - 1) / cm::kTile, bcols = (n + cm::kTile - 1) / cm::kTile;
  float as[cm::kTile][cm::kTile], bs[cm::kTile][cm::kTile];
  for (int by = 0; by < brows; ++by)
    for (int bx = 0; bx < bcols; ++bx) {
      float acc[cm::kTile][cm::kTile] = {};
      for (int t = 0; t < cm::tile_steps(k); ++t) {
        for (int ty = 0; ty < cm::kTile; ++ty)
          for (int tx = 0; tx < cm::kTile; ++tx) {
            as[ty][tx] = cm::load_a(a.data(), m, k, by, t, ty, tx);
            bs[ty][tx] = cm::load_b(b.data(), k, n, t, bx, ty, tx);
          }
        for (int ty = 0; ty < cm::kTile; ++ty)
          for (int tx = 0; tx < cm::kTile; ++tx)
            acc[ty][tx] = cm::tile_dot(as, bs, ty, tx, acc[ty][tx]);
      }
      for (int ty = 0; ty < cm::kTile; ++ty)
        for (int tx = 0; tx < cm::kTile; ++tx) {
          const int r = by * cm::kTile + ty, col = bx * cm::kTile + tx;
          if (r < m && col < n) c[static_cast<std::size_t>(r) * n + col] = acc[ty][tx];
        }
    }
  return c;
}

void compare(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  QCOMPARE(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > tol * (1 + std::abs(want[i])))
      QFAIL(qPrintable(QString("element %1: %2, expected %3").arg(i).arg(got[i]).arg(want[i])));
}

}  // namespace

class TestCudaMath : public QObject {
  Q_OBJECT
 private slots:
  void elementwiseMatchesTheCpuOps() {
    const auto x = random_values(1000, 1), y = random_values(1000, 2);
    const Tensor tx = Tensor::from_vector(x, {1000}), ty = Tensor::from_vector(y, {1000});
    std::vector<float> add(1000), mul(1000), relu_v(1000), gelu_v(1000);
    for (std::size_t i = 0; i < x.size(); ++i) {
      add[i] = cm::add(x[i], y[i]);
      mul[i] = cm::mul(x[i], y[i]);
      relu_v[i] = cm::relu(x[i]);
      gelu_v[i] = cm::gelu(x[i]);
    }
    compare(add, ckpt::add(tx, ty).to_vector(), 1e-6);
    compare(mul, ckpt::mul(tx, ty).to_vector(), 1e-6);
    compare(relu_v, ckpt::relu(tx).to_vector(), 0);
    compare(gelu_v, ckpt::gelu(tx).to_vector(), 1e-6);
    QVERIFY(std::isnan(cm::relu(NAN)));
  }

  void backwardFormulasMatchAutograd() {
    const auto x = random_values(200, 3), g = random_values(200, 4);
    for (bool is_gelu : {false, true}) {
      Tensor tx = Tensor::from_vector(x, {200});
      tx.set_requires_grad(true);
      Tensor out = is_gelu ? ckpt::gelu(tx) : ckpt::relu(tx);
      out.backward(Tensor::from_vector(g, {200}));
      const auto r = out.detach().to_vector();
      std::vector<float> mine(200);
      for (std::size_t i = 0; i < 200; ++i)
        mine[i] = is_gelu ? cm::gelu_backward(g[i], x[i])
                          : cm::relu_backward(g[i], static_cast<float>(r[i]));
      compare(mine, tx.grad().to_vector(), 1e-5);
    }
  }

  void softmaxRowMatchesTheCpuOp() {
    const int rows = 7, n = 33;
    const auto x = random_values(rows * n, 5, 8.0), dy = random_values(rows * n, 6);
    Tensor tx = Tensor::from_vector(x, {rows, n});
    tx.set_requires_grad(true);
    Tensor ty = ckpt::softmax(tx, 1);
    ty.backward(Tensor::from_vector(dy, {rows, n}));
    std::vector<float> y(x.size()), dx(x.size());
    for (int r = 0; r < rows; ++r) {
      cm::softmax_row(x.data() + r * n, y.data() + r * n, n);
      cm::softmax_row_backward(y.data() + r * n, dy.data() + r * n, dx.data() + r * n, n);
    }
    compare(y, ty.detach().to_vector(), 1e-6);
    compare(dx, tx.grad().to_vector(), 1e-5);
  }

  void tiledGemmMatchesMatmul_data() {
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::newRow("one tile") << 16 << 16 << 16;
    QTest::newRow("ragged edges") << 37 << 41 << 29;
    QTest::newRow("thin") << 1 << 50 << 70;
    QTest::newRow("k smaller than a tile") << 20 << 18 << 3;
  }
  void tiledGemmMatchesMatmul() {
    QFETCH(int, m);
    QFETCH(int, n);
    QFETCH(int, k);
    const auto a = random_values(static_cast<std::size_t>(m) * k, 7, 1.0);
    const auto b = random_values(static_cast<std::size_t>(k) * n, 8, 1.0);
    const auto want = matmul(Tensor::from_vector(a, {m, k}), Tensor::from_vector(b, {k, n}));
    compare(tiled_gemm(a, b, m, n, k), want.to_vector(), 1e-5);
  }

  // The strided copy's and the sum's addressing: a transposed view walked in row-major order,
  // and a sum over dimensions 1 and 3 of a [3, 4, 5, 2] tensor, against the engine's kernels.
  void stridedLayoutsWalkLikeTheCpu() {
    const Tensor t = Tensor::from_vector(random_values(3 * 4 * 5 * 2, 21), {3, 4, 5, 2});
    const Tensor view = t.alias({5, 3}, {1, 5}, 0);  // the first 15 elements, transposed
    const auto want = view.to_vector();
    const auto values = t.to_vector();
    cm::StridedLayout l;
    l.nd = 2;
    l.size[0] = 5, l.size[1] = 3, l.stride[0] = 1, l.stride[1] = 5;
    for (std::int64_t i = 0; i < 15; ++i)
      QCOMPARE(values[static_cast<std::size_t>(cm::offset_of(l, i))],
               want[static_cast<std::size_t>(i)]);
    cm::StridedLayout kept, reduced;
    kept.nd = 2, kept.size[0] = 3, kept.size[1] = 5, kept.stride[0] = 40, kept.stride[1] = 2;
    reduced.nd = 2, reduced.size[0] = 4, reduced.size[1] = 2, reduced.stride[0] = 10,
    reduced.stride[1] = 1;
    const auto sums = sum(t, {1, 3}, false).to_vector();
    const auto host = std::vector<float>(values.begin(), values.end());
    for (std::int64_t j = 0; j < 15; ++j)
      QVERIFY(std::abs(cm::sum_one(host.data(), kept, reduced, 8, j) -
                       sums[static_cast<std::size_t>(j)]) < 1e-5);
  }
};

QTEST_APPLESS_MAIN(TestCudaMath)
#include "test_cuda_math.moc"
