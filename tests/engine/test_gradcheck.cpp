#include <QtTest>

#include "engine/ops/mask.hpp"
#include "engine/ops/ops.hpp"
#include "engine/ops/vector_norm.hpp"
#include "support/gradcheck.hpp"

using namespace ckpt;
using ckpt::testing::Fn;
using ckpt::testing::gradcheck;
using ckpt::testing::random_leaf;

Q_DECLARE_METATYPE(ckpt::testing::Fn)
Q_DECLARE_METATYPE(ckpt::TensorList)

// One row per op and shape case: every op's backward against central finite differences in
// f64, broadcasting and non-contiguous views included.
class TestGradcheck : public QObject {
  Q_OBJECT
 private slots:
  void ops_data() {
    QTest::addColumn<Fn>("f");
    QTest::addColumn<TensorList>("inputs");
    auto row = [](const char* name, Fn f, TensorList in) { QTest::newRow(name) << f << in; };
    auto L = [](Shape s, std::uint64_t seed, double lo = -1, double hi = 1) {
      return random_leaf(s, seed, lo, hi);
    };
    row("add", [](const TensorList& x) { return add(x[0], x[1]); }, {L({3, 4}, 1), L({3, 4}, 2)});
    row("add broadcast", [](const TensorList& x) { return add(x[0], x[1]); },
        {L({3, 4}, 1), L({4}, 2)});
    row("add 0-d", [](const TensorList& x) { return add(x[0], x[1]); }, {L({5}, 1), L({}, 2)});
    row("sub broadcast", [](const TensorList& x) { return sub(x[0], x[1]); },
        {L({2, 1, 3}, 3), L({4, 1}, 4)});
    row("mul", [](const TensorList& x) { return mul(x[0], x[1]); }, {L({3, 4}, 5), L({3, 4}, 6)});
    row("mul broadcast", [](const TensorList& x) { return mul(x[0], x[1]); },
        {L({3, 4}, 5), L({3, 1}, 6)});
    row("div", [](const TensorList& x) { return div(x[0], x[1]); },
        {L({3, 4}, 7), L({3, 4}, 8, 0.5, 2)});
    row("div broadcast", [](const TensorList& x) { return div(x[0], x[1]); },
        {L({3, 4}, 7), L({4}, 8, 0.5, 2)});
    row("add scalar", [](const TensorList& x) { return add(x[0], 2.5); }, {L({4}, 9)});
    row("sub scalar", [](const TensorList& x) { return sub(x[0], 2.5); }, {L({4}, 9)});
    row("mul scalar", [](const TensorList& x) { return mul(x[0], -3.0); }, {L({4}, 10)});
    row("div scalar", [](const TensorList& x) { return div(x[0], 8.0); }, {L({4}, 11)});
    row("maximum broadcast", [](const TensorList& x) { return maximum(x[0], x[1]); },
        {L({3, 4}, 31), L({4}, 32)});
    row("minimum broadcast", [](const TensorList& x) { return minimum(x[0], x[1]); },
        {L({3, 1}, 33), L({3, 4}, 34)});
    // Masks computed at run time: the comparison picks, where selects (its gradient flows to
    // the picked side, broadcast), cast and logical_not change only the mask.
    row("gt@where", [](const TensorList& x) { return where(gt(x[0], x[1]), x[0], x[1]); },
        {L({3, 4}, 40), L({4}, 41)});
    row("lt@where", [](const TensorList& x) { return where(lt(x[0], x[1]), x[0], x[1]); },
        {L({3, 4}, 42), L({4}, 43)});
    row("ge@where", [](const TensorList& x) { return where(ge(x[0], x[1]), x[1], x[0]); },
        {L({3, 4}, 44), L({3, 1}, 45)});
    row("le@where", [](const TensorList& x) { return where(le(x[0], x[1]), x[1], x[0]); },
        {L({3, 4}, 46), L({3, 1}, 47)});
    row("eq@where", [](const TensorList& x) { return where(eq(x[0], x[0]), x[1], x[0]); },
        {L({3, 4}, 48), L({3, 4}, 49)});
    row("where broadcast",
        [](const TensorList& x) {
          return where(gt(x[0], Tensor::scalar(0.0, DType::f64)), x[1], x[2]);
        },
        {L({2, 1, 4}, 50), L({3, 4}, 51), L({2, 3, 1}, 52)});
    row("logical_not@where",
        [](const TensorList& x) { return where(logical_not(gt(x[0], x[1])), x[0], x[1]); },
        {L({3, 4}, 53), L({3, 4}, 54)});
    row("cast@mask",
        [](const TensorList& x) {
          return mul(x[0], cast(gt(x[1], Tensor::scalar(0.0, DType::f64)), DType::f64));
        },
        {L({3, 4}, 55), L({3, 4}, 56)});
    // Masks a forward builds (engine/ops/mask.hpp): no gradient of their own, and what the
    // ops that read them pass back.
    row("full@add",
        [](const TensorList& x) {
          return add(x[0], filled({3, 4}, 2.0, DType::f64));
        },
        {L({3, 4}, 57)});
    row("arange@mul",
        [](const TensorList& x) { return mul(x[0], arange_range(-1, 3, 1, DType::f64)); },
        {L({3, 4}, 58)});
    row("trilu triu", [](const TensorList& x) { return trilu(x[0], 1, true); }, {L({2, 3, 4}, 59)});
    row("trilu tril", [](const TensorList& x) { return trilu(x[0], -1, false); }, {L({3, 4}, 60)});
    row("compare_scalar@where",
        [](const TensorList& x) { return where(compare_scalar(x[0], 0.0, "gt"), x[0], x[1]); },
        {L({3, 4}, 61), L({3, 4}, 62)});
    row("ne@where", [](const TensorList& x) { return where(not_equal(x[0], x[1]), x[0], x[1]); },
        {L({3, 4}, 63), L({4}, 64)});
    row("logical@where",
        [](const TensorList& x) {
          return where(logical_binary(compare_scalar(x[0], 0.0, "gt"),
                                      compare_scalar(x[1], 0.0, "lt"), "or"),
                       x[0], x[1]);
        },
        {L({3, 4}, 65), L({3, 4}, 66)});
    row("masked_fill",
        [](const TensorList& x) {
          return mul(masked_fill(x[0], compare_scalar(x[1], 0.0, "gt"), 0.5), x[1]);
        },
        {L({3, 4}, 67), L({4}, 68)});
    row("masked_fill_inplace",
        [](const TensorList& x) {
          Tensor m = filled({3, 4}, 1.0, DType::f64);
          masked_fill_(m, compare_scalar(x[1], 0.0, "gt"), 3.0);
          return add(mul(x[0], m), x[1]);
        },
        {L({3, 4}, 69), L({4}, 70)});
    row("fill_inplace",
        [](const TensorList& x) {
          Tensor m = filled({3, 4}, 1.0, DType::f64);
          Tensor part = slice(m, 1, 1, 3, 1);
          fill_(part, -2.0);
          return mul(x[0], m);
        },
        {L({3, 4}, 71)});
    row("vector_norm", [](const TensorList& x) { return vector_norm(x[0], 2, {-1}, true); },
        {L({3, 4}, 72)});
    row("vector_norm p3 all", [](const TensorList& x) { return vector_norm(x[0], 3, {}, false); },
        {L({2, 3, 4}, 73)});
    row("neg", [](const TensorList& x) { return neg(x[0]); }, {L({4}, 12)});
    row("pow 2", [](const TensorList& x) { return pow(x[0], 2.0); }, {L({4}, 13)});
    row("pow 0.5", [](const TensorList& x) { return pow(x[0], 0.5); }, {L({4}, 13, 0.5, 2)});
    row("exp", [](const TensorList& x) { return exp(x[0]); }, {L({3, 4}, 14)});
    row("log", [](const TensorList& x) { return log(x[0]); }, {L({3, 4}, 15, 0.5, 2)});
    row("sqrt", [](const TensorList& x) { return sqrt(x[0]); }, {L({3, 4}, 16, 0.5, 2)});
    row("rsqrt", [](const TensorList& x) { return rsqrt(x[0]); }, {L({3, 4}, 16, 0.5, 2)});
    row("reciprocal", [](const TensorList& x) { return reciprocal(x[0]); },
        {L({3, 4}, 16, 0.5, 2)});
    row("relu", [](const TensorList& x) { return relu(x[0]); }, {L({3, 4}, 17)});
    row("gelu", [](const TensorList& x) { return gelu(x[0]); }, {L({3, 4}, 18)});
    row("gelu tanh", [](const TensorList& x) { return gelu_tanh(x[0]); }, {L({3, 4}, 18, -3, 3)});
    row("silu", [](const TensorList& x) { return silu(x[0]); }, {L({3, 4}, 36, -4, 4)});
    row("mish", [](const TensorList& x) { return mish(x[0]); }, {L({3, 4}, 37, -4, 4)});
    row("glu dim 1", [](const TensorList& x) { return glu(x[0], 1); }, {L({2, 6, 3}, 38, -3, 3)});
    row("glu dim -1", [](const TensorList& x) { return glu(x[0], -1); }, {L({3, 4}, 39, -3, 3)});
    row("tanh", [](const TensorList& x) { return tanh(x[0]); }, {L({3, 4}, 19)});
    row("sigmoid", [](const TensorList& x) { return sigmoid(x[0]); }, {L({3, 4}, 20)});
    row("sin", [](const TensorList& x) { return sin(x[0]); }, {L({3, 4}, 21)});
    row("cos", [](const TensorList& x) { return cos(x[0]); }, {L({3, 4}, 21)});
    // Over [-5, 5]: every piece of the piecewise slope, away from the kinks at -3 and 3.
    row("hardswish", [](const TensorList& x) { return hardswish(x[0]); }, {L({3, 4}, 24, -5, 5)});
    row("hardsigmoid", [](const TensorList& x) { return hardsigmoid(x[0]); },
        {L({3, 4}, 25, -5, 5)});
    // Over [-3, 3] with 12 draws: both sides of each kink, none within the step of it.
    row("leaky_relu", [](const TensorList& x) { return leaky_relu(x[0], 0.2); },
        {L({3, 4}, 26, -3, 3)});
    row("elu", [](const TensorList& x) { return elu(x[0], 1.5); }, {L({3, 4}, 27, -3, 3)});
    row("softplus", [](const TensorList& x) { return softplus(x[0]); }, {L({3, 4}, 28, -3, 3)});
    // Piecewise constant: its gradient is 0, as finite differences away from 0 agree.
    row("sign", [](const TensorList& x) { return mul(sign(x[0]), x[0]); }, {L({3, 4}, 35, -3, 3)});
    row("abs", [](const TensorList& x) { return abs(x[0]); }, {L({3, 4}, 29, -3, 3)});
    row("sum", [](const TensorList& x) { return sum(x[0]); }, {L({3, 4}, 22)});
    // Over a transposed view, two dims of three; distinct draws, so no ties.
    row("amax dims",
        [](const TensorList& x) {
          return amax(transpose(x[0], 0, 2), {0, 2});
        },
        {L({3, 4, 2}, 30)});
    row("sum dim", [](const TensorList& x) { return sum(x[0], {1}); }, {L({3, 4, 2}, 23)});
    row("sum dims keepdim",
        [](const TensorList& x) {
          return sum(x[0], {0, 2}, true);
        },
        {L({3, 4, 2}, 23)});
    row("mean", [](const TensorList& x) { return mean(x[0]); }, {L({3, 4}, 24)});
    row("mean dim", [](const TensorList& x) { return mean(x[0], {-1}); }, {L({3, 4}, 25)});
    row("matmul 2d", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({3, 4}, 26), L({4, 5}, 27)});
    row("matmul batched", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({2, 3, 4}, 28), L({2, 4, 5}, 29)});
    row("matmul broadcast batch", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({2, 3, 4}, 28), L({4, 5}, 29)});
    row("matmul vector", [](const TensorList& x) { return matmul(x[0], x[1]); },
        {L({3, 4}, 30), L({4}, 31)});
    row("matmul transposed view",
        [](const TensorList& x) { return matmul(transpose(x[0], 0, 1), x[1]); },
        {L({4, 3}, 32), L({4, 5}, 33)});
    row("linear", [](const TensorList& x) { return linear(x[0], x[1], x[2]); },
        {L({5, 4}, 34), L({3, 4}, 35), L({3}, 36)});
    row("linear 3d input no bias", [](const TensorList& x) { return linear(x[0], x[1]); },
        {L({2, 5, 4}, 37), L({3, 4}, 38)});
    row("reshape", [](const TensorList& x) { return reshape(x[0], {4, 3}); }, {L({3, 4}, 39)});
    row("view", [](const TensorList& x) { return mul(view(x[0], {12}), 2.0); }, {L({3, 4}, 40)});
    row("flatten", [](const TensorList& x) { return flatten(x[0], 1); }, {L({2, 3, 4}, 41)});
    row("transpose", [](const TensorList& x) { return transpose(x[0], 0, 2); }, {L({2, 3, 4}, 42)});
    row("permute",
        [](const TensorList& x) {
          return permute(x[0], {2, 0, 1});
        },
        {L({2, 3, 4}, 43)});
    row("reshape of a transposed view",
        [](const TensorList& x) { return reshape(transpose(x[0], 0, 1), {12}); }, {L({3, 4}, 44)});
    row("slice", [](const TensorList& x) { return slice(x[0], 1, 1, 4, 2); }, {L({3, 5}, 45)});
    row("unsqueeze squeeze",
        [](const TensorList& x) { return squeeze(mul(unsqueeze(x[0], 1), 2.0), 1); },
        {L({3, 4}, 46)});
    row("expand",
        [](const TensorList& x) {
          return mul(expand(x[0], {3, 4}), 1.5);
        },
        {L({3, 1}, 47)});
    row("cat",
        [](const TensorList& x) {
          return cat({x[0], x[1]}, 1);
        },
        {L({2, 3}, 48), L({2, 2}, 49)});
    row("cat of views",
        [](const TensorList& x) {
          return cat({transpose(x[0], 0, 1), x[1]}, 0);
        },
        {L({3, 2}, 50), L({1, 3}, 51)});
    row("clone", [](const TensorList& x) { return clone(transpose(x[0], 0, 1)); }, {L({3, 2}, 52)});
    row("upsample_nearest2d",
        [](const TensorList& x) {
          return mul(upsample_nearest2d(x[0], {6, 5}), x[1]);
        },
        {L({2, 2, 3, 2}, 54), L({2, 2, 6, 5}, 55)});
    row("upsample_bilinear2d",
        [](const TensorList& x) {
          return mul(upsample_bilinear2d(x[0], {7, 5}, false), x[1]);
        },
        {L({2, 2, 3, 4}, 56), L({2, 2, 7, 5}, 57)});
    row("upsample_bilinear2d align_corners",
        [](const TensorList& x) {
          return mul(upsample_bilinear2d(transpose(x[0], 2, 3), {6, 7}, true), x[1]);
        },
        {L({1, 2, 4, 3}, 58), L({1, 2, 6, 7}, 59)});
    // A scale factor (1 / 1.7 per output pixel) and a downsampled side.
    row("upsample_bilinear2d scale",
        [](const TensorList& x) {
          return mul(upsample_bilinear2d(x[0], {6, 2}, false, {1.7, 0.6}), x[1]);
        },
        {L({1, 2, 4, 4}, 60), L({1, 2, 6, 2}, 61)});
    row("conv_transpose2d",
        [](const TensorList& x) {
          return conv_transpose2d(x[0], x[1], x[2], {2, 2}, {1, 1}, {1, 1});
        },
        {L({2, 3, 3, 4}, 62), L({3, 2, 3, 3}, 63), L({2}, 64)});
    row("conv_transpose2d groups dilation",
        [](const TensorList& x) {
          return conv_transpose2d(x[0], x[1], Tensor(), {1, 2}, {2, 0}, {0, 1}, {2, 1}, 2);
        },
        {L({2, 4, 4, 3}, 65), L({4, 3, 3, 2}, 66)});
    row("repeat",
        [](const TensorList& x) {
          return mul(repeat(transpose(x[0], 0, 1), {2, 1, 3}), x[1]);
        },
        {L({3, 2}, 67), L({2, 2, 9}, 68)});
    // Swin's window padding: H and W of [B, H, W, C] padded after, on a transposed view.
    row("constant_pad",
        [](const TensorList& x) {
          return mul(constant_pad(transpose(x[0], 1, 2), {0, 0, 2, 0}, {1, 3, 0, 0}, 0.5), 1.5);
        },
        {L({2, 3, 2, 2}, 53)});
  }

  void ops() {
    QFETCH(Fn, f);
    QFETCH(TensorList, inputs);
    const auto r = gradcheck(f, inputs);
    QVERIFY2(r.ok(),
             qPrintable(QString::fromStdString(r.where) +
                        QString(" (abs %1, rel %2)").arg(r.max_abs_error).arg(r.max_rel_error)));
  }

  // The checker itself must catch a wrong backward.
  void gradcheckDetectsAWrongBackward() {
    Fn wrong = [](const TensorList& x) {
      Tensor out = Tensor::from_vector(x[0].to_vector(), x[0].shape());
      record("WrongBackward", {x[0]}, {out}, {},
             [](BackwardContext& c) -> TensorList { return {mul_raw_for_test(c.grads[0])}; });
      return mul(out, out);
    };
    const auto r = gradcheck(wrong, {random_leaf({3}, 60)});
    QVERIFY(!r.ok());
  }

 private:
  static Tensor mul_raw_for_test(const Tensor& g) { return mul(g, 0.5); }
};

QTEST_APPLESS_MAIN(TestGradcheck)
#include "test_gradcheck.moc"
