// The convolution's tiled path (engine/kernels/conv_tiled.cpp: images of 256 output pixels or
// more, im2col by column tiles, the packed float32 GEMM, the input gradient as a flipped forward)
// against a direct convolution written out here in double: outputs, input, weight and bias
// gradients over 1, 2 and 3 spatial dimensions, with groups, strides, dilations, padding, output
// channels that fill no whole panel and pixel counts that fill no whole tile, on one thread
// and two. float32 must agree to its rounding, float64 to ~1e-12.

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
  Shape x, w;  // [N, C, T, H, W], [O, C / groups, kt, kh, kw] (1-D and 2-D: unit T, H)
  ConvInts stride, pad, dilation;
  std::int64_t groups;
  int spatial;
};

struct Result {
  std::vector<double> y, dx, dw, db;
};

Shape ranked_shape(const Shape& s, int spatial) {
  Shape r{s[0], s[1]};
  for (int d = 3 - spatial; d < 3; ++d) r.push_back(s[static_cast<std::size_t>(2 + d)]);
  return r;
}

ConvInts last_dims(const ConvInts& v, int spatial) {
  return ConvInts(v.end() - spatial, v.end());
}

// y and the gradients of sum(y * gy) by the definition of the convolution.
Result direct(const Case& c, const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& b, const std::vector<double>& gy, const Shape& ys) {
  const std::int64_t n = c.x[0], ch = c.x[1], o = c.w[0], cg = c.w[1], og = o / c.groups;
  const std::int64_t in[3] = {c.x[2], c.x[3], c.x[4]}, k[3] = {c.w[2], c.w[3], c.w[4]};
  const std::int64_t out[3] = {ys[2], ys[3], ys[4]};
  Result r{std::vector<double>(static_cast<std::size_t>(shape_numel(ys))),
           std::vector<double>(x.size()), std::vector<double>(w.size()),
           std::vector<double>(b.size())};
  for (std::int64_t ni = 0; ni < n; ++ni)
    for (std::int64_t oi = 0; oi < o; ++oi)
      for (std::int64_t z = 0; z < out[0]; ++z)
        for (std::int64_t yy = 0; yy < out[1]; ++yy)
          for (std::int64_t xx = 0; xx < out[2]; ++xx) {
            const std::size_t yi = static_cast<std::size_t>(
                (((ni * o + oi) * out[0] + z) * out[1] + yy) * out[2] + xx);
            double acc = b.empty() ? 0.0 : b[static_cast<std::size_t>(oi)];
            const double g = gy[yi];
            if (!b.empty()) r.db[static_cast<std::size_t>(oi)] += g;
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t a = 0; a < k[0]; ++a)
                for (std::int64_t i = 0; i < k[1]; ++i)
                  for (std::int64_t j = 0; j < k[2]; ++j) {
                    const std::int64_t p[3] = {z * c.stride[0] - c.pad[0] + a * c.dilation[0],
                                               yy * c.stride[1] - c.pad[1] + i * c.dilation[1],
                                               xx * c.stride[2] - c.pad[2] + j * c.dilation[2]};
                    if (p[0] < 0 || p[0] >= in[0] || p[1] < 0 || p[1] >= in[1] || p[2] < 0 ||
                        p[2] >= in[2])
                      continue;
                    const std::int64_t cin = oi / og * cg + ci;
                    const auto xi = static_cast<std::size_t>(
                        (((ni * ch + cin) * in[0] + p[0]) * in[1] + p[1]) * in[2] + p[2]);
                    const auto wi = static_cast<std::size_t>(
                        (((oi * cg + ci) * k[0] + a) * k[1] + i) * k[2] + j);
                    acc += x[xi] * w[wi];
                    r.dx[xi] += g * w[wi];
                    r.dw[wi] += g * x[xi];
                  }
            r.y[yi] = acc;
          }
  return r;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

double max_abs(const std::vector<double>& a) {
  double m = 1e-30;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace

class TestConvTiled : public QObject {
  Q_OBJECT

 private slots:
  void matchesDirect_data() {
    QTest::addColumn<int>("index");
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("dtype");
    for (int i = 0; i < 6; ++i)
      for (int threads : {1, 2})
        for (DType d : {DType::f32, DType::f64})
          QTest::addRow("case %d, %d thread(s), %s", i, threads, d == DType::f32 ? "f32" : "f64")
              << i << threads << static_cast<int>(d);
  }

  void matchesDirect() {
    QFETCH(int, index);
    QFETCH(int, threads);
    QFETCH(int, dtype);
    const std::vector<Case> cases = {
        // R3D-18's first stage, narrowed: 3x3x3, stride 1, padding 1 (flipped input gradient).
        {{2, 3, 4, 9, 10}, {10, 3, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 3},
        // Dilated, grouped, anisotropic padding, 3 output channels a group (no whole panel).
        {{1, 4, 6, 10, 10}, {6, 2, 2, 3, 3}, {1, 1, 1}, {1, 1, 2}, {2, 1, 2}, 2, 3},
        // The R3D stem's shape: strided (input gradient by column tiles and col2im), 7x7.
        {{1, 3, 4, 20, 22}, {9, 3, 3, 7, 7}, {1, 2, 2}, {1, 3, 3}, {1, 1, 1}, 1, 3},
        // wav2vec's strided 1-D convolution, and a long padded dilated one.
        {{2, 5, 1, 1, 1400}, {7, 5, 1, 1, 10}, {1, 1, 5}, {0, 0, 0}, {1, 1, 1}, 1, 1},
        {{1, 6, 1, 1, 700}, {6, 2, 1, 1, 3}, {1, 1, 1}, {0, 0, 4}, {1, 1, 4}, 3, 1},
        // Deep columns (K = 1,728), strided: the input gradient in several spans of pixels.
        {{1, 64, 8, 40, 40}, {8, 64, 3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, 1, 3},
    };
    const Case& c = cases[static_cast<std::size_t>(index)];
    const auto type = static_cast<DType>(dtype);
    const int previous = omp_get_max_threads();
    omp_set_num_threads(threads);
    Tensor x64 = random_leaf(ranked_shape(c.x, c.spatial), 11 + index);
    Tensor w64 = random_leaf(ranked_shape(c.w, c.spatial), 12 + index);
    Tensor b64 = random_leaf({c.w[0]}, 13 + index);
    auto as = [&](const Tensor& t) {
      if (type == DType::f64) return t;
      Tensor r = cast_raw(t.detach(), type);
      r.set_requires_grad(true);
      return r;
    };
    Tensor x = as(x64), w = as(w64), b = as(b64);
    Tensor y = conv(x, w, b, last_dims(c.stride, c.spatial), last_dims(c.pad, c.spatial),
                    last_dims(c.dilation, c.spatial), c.groups);
    QVERIFY2(y.numel() / y.shape()[0] / y.shape()[1] >= 256, "not the tiled path's size");
    Tensor gy = random_leaf(y.shape(), 14 + index).detach();
    sum(mul(y, type == DType::f64 ? gy : cast_raw(gy, type))).backward();
    omp_set_num_threads(previous);
    Shape ys = y.shape();
    while (ys.size() < 5) ys.insert(ys.begin() + 2, 1);
    const Result ref =
        direct(c, x64.to_vector(), w64.to_vector(), b64.to_vector(), gy.to_vector(), ys);
    // float32: the sums run over up to 1,728 products of values in [-1, 1].
    const double tol = type == DType::f64 ? 1e-12 : 2e-5;
    const std::pair<const char*, std::pair<std::vector<double>, const std::vector<double>*>>
        checks[] = {{"y", {y.to_vector(), &ref.y}},
                    {"dx", {x.grad().to_vector(), &ref.dx}},
                    {"dw", {w.grad().to_vector(), &ref.dw}},
                    {"db", {b.grad().to_vector(), &ref.db}}};
    for (const auto& [name, values] : checks) {
      const double err = max_abs_diff(values.first, *values.second) / max_abs(*values.second);
      if (!(err <= tol)) qWarning("%s: relative error %.3g", name, err);
      QVERIFY(err <= tol);
    }
  }
};

QTEST_GUILESS_MAIN(TestConvTiled)
#include "test_conv_tiled.moc"
