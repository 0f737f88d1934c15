#include <QtTest>

#include <cmath>

#include "engine/ops/ops.hpp"
#include "engine/tensor/npy.hpp"

using namespace ckpt;

class TestTensor : public QObject {
  Q_OBJECT
 private slots:
  void factoriesHaveShapeDtypeAndValues() {
    Tensor z = Tensor::zeros({2, 3});
    QCOMPARE(z.numel(), 6);
    QCOMPARE(z.nbytes(), 24);
    QVERIFY(z.dtype() == DType::f32);
    QCOMPARE(Tensor::full({2}, 3.5, DType::f64).to_vector(), (std::vector<double>{3.5, 3.5}));
    QCOMPARE(Tensor::arange(4, DType::i64).to_vector(), (std::vector<double>{0, 1, 2, 3}));
    QCOMPARE(Tensor::scalar(2.0).dim(), 0);
    QCOMPARE(Tensor::scalar(2.0).item(), 2.0);
  }

  void viewsShareStorage() {
    Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor t = transpose(x, 0, 1);
    QVERIFY(t.shares_storage(x));
    QVERIFY(!t.is_contiguous());
    QCOMPARE(t.shape(), (Shape{3, 2}));
    QCOMPARE(t.to_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
    Tensor r = reshape(x, {3, -1});
    QVERIFY(r.shares_storage(x));
    QCOMPARE(r.shape(), (Shape{3, 2}));
    Tensor s = slice(x, 1, 1, 3);
    QVERIFY(s.shares_storage(x));
    QCOMPARE(s.to_vector(), (std::vector<double>{2, 3, 5, 6}));
    // Reshaping a transposed tensor cannot be a view: it copies.
    Tensor rt = reshape(t, {6});
    QVERIFY(!rt.shares_storage(x));
    QCOMPARE(rt.to_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
    Tensor p = permute(Tensor::zeros({2, 3, 4}), {2, 0, 1});
    QCOMPARE(p.shape(), (Shape{4, 2, 3}));
  }

  void viewOfNonContiguousIsAnError() {
    Tensor t = transpose(Tensor::zeros({2, 3}), 0, 1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, view(t, {6}));
  }

  void absurdShapesAreClearErrors() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tensor::zeros({-1, 3}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Tensor::zeros({1LL << 40, 1LL << 40}));
    // No element, but strides beyond int64 (PyTorch 1.13's torch.empty crashes on this one).
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             Tensor::empty({0, 10'000'000'000'000LL, 1'000'000}));
    QCOMPARE(Tensor::empty({0, 1'000'000, 1'000}).numel(), std::int64_t(0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reshape(Tensor::zeros({2, 3}), {4, 2}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, add(Tensor::zeros({2, 3}), Tensor::zeros({4})));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 2})));
  }

  void broadcastingBinaryOps() {
    Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = Tensor::from_vector(std::vector<float>{10, 20, 30}, {3});
    QCOMPARE(add(a, b).to_vector(), (std::vector<double>{11, 22, 33, 14, 25, 36}));
    Tensor c = Tensor::from_vector(std::vector<float>{1, 2}, {2, 1});
    QCOMPARE(mul(a, c).to_vector(), (std::vector<double>{1, 2, 3, 8, 10, 12}));
    QCOMPARE(sub(transpose(a, 0, 1), Tensor::scalar(1)).to_vector(),
             (std::vector<double>{0, 3, 1, 4, 2, 5}));
  }

  void matmulAndLinear() {
    Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = Tensor::from_vector(std::vector<float>{1, 0, 0, 1, 1, 1}, {3, 2});
    QCOMPARE(matmul(a, b).to_vector(), (std::vector<double>{4, 5, 10, 11}));
    // Batched with broadcasting of the 2-D operand.
    Tensor ab = reshape(cat({a, a}, 0), {2, 2, 3});
    Tensor r = matmul(ab, b);
    QCOMPARE(r.shape(), (Shape{2, 2, 2}));
    QCOMPARE(r.to_vector(), (std::vector<double>{4, 5, 10, 11, 4, 5, 10, 11}));
    Tensor w = transpose(b, 0, 1);  // [2, 3]
    Tensor bias = Tensor::from_vector(std::vector<float>{100, 200}, {2});
    QCOMPARE(linear(a, w, bias).to_vector(), (std::vector<double>{104, 205, 110, 211}));
    Tensor v = Tensor::from_vector(std::vector<float>{1, 1, 1}, {3});
    QCOMPARE(matmul(a, v).to_vector(), (std::vector<double>{6, 15}));
  }

  void reductions() {
    Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    QCOMPARE(sum(a).item(), 21.0);
    QCOMPARE(sum(a, {0}).to_vector(), (std::vector<double>{5, 7, 9}));
    QCOMPARE(sum(a, {1}, true).shape(), (Shape{2, 1}));
    QCOMPARE(mean(a, {1}).to_vector(), (std::vector<double>{2, 5}));
    QCOMPARE(mean(a).item(), 3.5);
    Tensor x = reshape(Tensor::arange(24), {2, 3, 4});
    QCOMPARE(sum(x, {0, 2}).to_vector(), (std::vector<double>{60, 92, 124}));
  }

  // Permuted views large enough for the blocked transposed walk (kernels.hpp,
  // for_each_offset_transposed): a copy and an elementwise map read every element from where
  // the view says, whatever the ragged blocks, the leading dimensions and the threads.
  void permutedViewsCopyAndMapByElement() {
    for (const Shape& shape : {Shape{2, 70, 300}, Shape{3, 33, 5, 81}}) {
      std::vector<double> values(static_cast<std::size_t>(shape_numel(shape)));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) * 0.5;
      const Tensor t = Tensor::from_vector(values, shape);
      const auto rank = static_cast<std::int64_t>(shape.size());
      const Tensor view = transpose(t, 1, rank - 1);  // stride 1 on dimension 1, not the last
      QVERIFY(!view.is_contiguous());
      const std::vector<double> copied = contiguous(view).to_vector();
      const std::vector<double> mapped = sqrt(view).to_vector();
      QCOMPARE(copied.size(), values.size());
      // The transposed view's element at row-major index i, read through its strides.
      const Shape& vs = view.shape();
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(values.size()); ++i) {
        std::int64_t rest = i, off = 0;
        for (auto d = rank - 1; d >= 0; --d) {
          const auto ud = static_cast<std::size_t>(d);
          off += rest % vs[ud] * view.strides()[ud];
          rest /= vs[ud];
        }
        const auto ui = static_cast<std::size_t>(i);
        QCOMPARE(copied[ui], values[static_cast<std::size_t>(off)]);
        QCOMPARE(mapped[ui], std::sqrt(values[static_cast<std::size_t>(off)]));
      }
    }
  }

  void npyRoundTrip() {
    const QString path = QDir::temp().filePath("ckptlab_test_roundtrip.npy");
    Tensor a = Tensor::from_vector(std::vector<double>{1.5, -2, 3}, {3, 1});
    save_npy(path.toStdString(), a);
    Tensor b = load_npy(path.toStdString());
    QCOMPARE(b.shape(), a.shape());
    QVERIFY(b.dtype() == DType::f64);
    QCOMPARE(b.to_vector(), a.to_vector());
    QFile bad(path);
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("not numpy");
    bad.close();
    try {
      load_npy(path.toStdString());
      QFAIL("expected an error");
    } catch (const std::runtime_error& e) {
      QVERIFY(QString(e.what()).contains("ckptlab_test_roundtrip.npy"));
      QVERIFY(QString(e.what()).contains("bad magic"));
    }
  }
};

QTEST_APPLESS_MAIN(TestTensor)
#include "test_tensor.moc"
