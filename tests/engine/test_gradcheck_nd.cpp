#include <QtTest>

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
}  // namespace

// The ops over 1 and 3 spatial dimensions (issue 38) — convolutions, pools, padding, norms,
// pixel shuffles, interpolation — and cat's legacy rule, against central finite differences
// in f64; the 2-D cases are test_gradcheck_nn's.
class TestGradcheckNd : public QObject {
  Q_OBJECT
 private slots:
  void ops_data() {
    QTest::addColumn<Fn>("f");
    QTest::addColumn<TensorList>("inputs");
    auto row = [](const char* name, Fn f, TensorList in) { QTest::newRow(name) << f << in; };

    // The same convolution over 1 and 3 spatial dimensions (conv1d, conv3d).
    row("conv 1d dilated strided padded",
        [](const TensorList& x) { return conv(x[0], x[1], x[2], {2}, {2}, {2}); },
        {L({2, 3, 11}, 80), L({4, 3, 3}, 81), L({4}, 82)});
    row("conv 1d depthwise unbatched",
        [](const TensorList& x) { return conv(x[0], x[1], Tensor(), {1}, {1}, {1}, 3); },
        {L({3, 7}, 83), L({3, 1, 3}, 84)});
    row("conv 1d grouped long (per-image path)",
        [](const TensorList& x) { return conv(x[0], x[1], x[2], {1}, {0}, {1}, 2); },
        {L({1, 4, 300}, 85), L({2, 2, 2}, 86), L({2}, 87)});
    row("conv 3d", [](const TensorList& x) { return conv(x[0], x[1], x[2], {1}, {1}); },
        {L({2, 2, 3, 4, 4}, 88), L({3, 2, 3, 3, 3}, 89), L({3}, 90)});
    row("conv 3d anisotropic stride pad dilation groups",
        [](const TensorList& x) {
          return conv(x[0], x[1], Tensor(), {1, 2, 1}, {1, 0, 2}, {2, 1, 2}, 2);
        },
        {L({1, 4, 5, 5, 6}, 91), L({2, 2, 2, 3, 2}, 92)});
    row("conv 3d (2+1)D factorised",
        [](const TensorList& x) {
          return conv(conv(x[0], x[1], Tensor(), {1, 2, 2}, {0, 1, 1}), x[2], Tensor(), {2, 1, 1},
                      {1, 0, 0});
        },
        {L({1, 2, 4, 5, 5}, 93), L({3, 2, 1, 3, 3}, 94), L({2, 3, 3, 1, 1}, 95)});
    row("conv_transpose 1d",
        [](const TensorList& x) { return conv_transpose(x[0], x[1], x[2], {2}, {1}, {1}, {1}); },
        {L({2, 3, 5}, 96), L({3, 2, 4}, 97), L({2}, 98)});
    row("conv_transpose 3d groups",
        [](const TensorList& x) {
          return conv_transpose(x[0], x[1], Tensor(), {2, 1, 2}, {1, 0, 0}, {1, 0, 0}, {1}, 2);
        },
        {L({1, 4, 2, 3, 2}, 99), L({4, 1, 3, 2, 2}, 100)});
    // Pooling over 1, 2 and 3 spatial dimensions (values far apart: no ties in a max window).
    row("max_pool 1d", [](const TensorList& x) { return max_pool(x[0], 1, {3}, {2}, {1}); },
        {L({2, 3, 9}, 104, -4, 4)});
    row("max_pool 3d dilated ceil",
        [](const TensorList& x) {
          return max_pool(x[0], 3, {2, 3, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, 2}, true);
        },
        {L({1, 2, 4, 5, 6}, 105, -4, 4)});
    row("avg_pool 1d exclude pad",
        [](const TensorList& x) { return avg_pool(x[0], 1, {3}, {2}, {1}, true, false); },
        {L({2, 2, 8}, 106)});
    row("avg_pool 3d", [](const TensorList& x) { return avg_pool(x[0], 3, {2}, {}, {1}); },
        {L({1, 2, 3, 4, 5}, 107)});
    row("adaptive_avg_pool 3d",
        [](const TensorList& x) {
          return adaptive_avg_pool(x[0], 3, {2, 3, 2});
        },
        {L({1, 2, 5, 7, 4}, 108)});
    row("adaptive_avg_pool 1d global",
        [](const TensorList& x) { return adaptive_avg_pool(x[0], 1, {1}); }, {L({2, 3, 7}, 109)});
    row("adaptive_max_pool 2d",
        [](const TensorList& x) {
          return adaptive_max_pool(x[0], 2, {3, 2});
        },
        {L({2, 2, 7, 5}, 110, -4, 4)});
    row("adaptive_max_pool 3d",
        [](const TensorList& x) {
          return adaptive_max_pool(x[0], 3, {2, 2, 3});
        },
        {L({1, 2, 4, 5, 7}, 111, -4, 4)});
    // F.pad's reflect, replicate and circular modes over 1 to 3 dims.
    row("pad reflect 1d",
        [](const TensorList& x) {
          return pad(x[0], {2, 3}, PadMode::reflect);
        },
        {L({2, 3, 5}, 112)});
    row("pad replicate 2d unbatched",
        [](const TensorList& x) {
          return pad(x[0], {1, 2, 3, 0}, PadMode::replicate);
        },
        {L({2, 3, 4}, 113)});
    row("pad circular 3d",
        [](const TensorList& x) {
          return pad(x[0], {1, 2, 0, 3, 2, 1}, PadMode::circular);
        },
        {L({1, 2, 3, 4, 3}, 114)});
    row("pad reflect 3d",
        [](const TensorList& x) {
          return pad(x[0], {1, 1, 2, 0, 1, 2}, PadMode::reflect);
        },
        {L({1, 2, 3, 4, 5}, 115)});
    // GroupNorm over 1-D, 2-D and 3-D inputs.
    row("group_norm 1d", [](const TensorList& x) { return group_norm(x[0], 2, x[1], x[2]); },
        {L({2, 4, 5}, 116), L({4}, 117), L({4}, 118)});
    row("group_norm 3d per channel, no affine",
        [](const TensorList& x) { return mul(group_norm(x[0], 3, Tensor(), Tensor()), x[1]); },
        {L({2, 3, 2, 3, 2}, 119), L({2, 3, 2, 3, 2}, 120)});
    row("instance_norm 1d affine",
        [](const TensorList& x) { return instance_norm(x[0], x[1], x[2]); },
        {L({2, 3, 5}, 121), L({3}, 122), L({3}, 123)});
    row("instance_norm 3d",
        [](const TensorList& x) { return mul(instance_norm(x[0], Tensor(), Tensor()), x[1]); },
        {L({2, 2, 2, 3, 2}, 124), L({2, 2, 2, 3, 2}, 125)});
    row("pixel_shuffle", [](const TensorList& x) { return mul(pixel_shuffle(x[0], 2), x[1]); },
        {L({2, 8, 2, 3}, 126), L({2, 2, 4, 6}, 127)});
    row("pixel_shuffle DCR unbatched",
        [](const TensorList& x) { return mul(pixel_shuffle(x[0], 3, true), x[1]); },
        {L({9, 2, 1}, 128), L({1, 6, 3}, 129)});
    row("pixel_unshuffle", [](const TensorList& x) { return mul(pixel_unshuffle(x[0], 2), x[1]); },
        {L({1, 3, 4, 2}, 130), L({1, 12, 2, 1}, 131)});
    row("pixel_unshuffle DCR",
        [](const TensorList& x) { return mul(pixel_unshuffle(x[0], 2, true), x[1]); },
        {L({2, 1, 2, 4}, 132), L({2, 4, 1, 2}, 133)});
    // Interpolation over 1 and 3 spatial dims (linear, trilinear, nearest).
    row("upsample_linear 1d",
        [](const TensorList& x) { return mul(upsample_linear(x[0], {7}, false), x[1]); },
        {L({2, 3, 4}, 134), L({2, 3, 7}, 135)});
    row("upsample_linear 3d trilinear align_corners",
        [](const TensorList& x) {
          return mul(upsample_linear(x[0], {3, 5, 4}, true), x[1]);
        },
        {L({1, 2, 2, 3, 3}, 136), L({1, 2, 3, 5, 4}, 137)});
    row("upsample_linear 3d scale factors",
        [](const TensorList& x) {
          return mul(upsample_linear(x[0], {4, 3, 6}, false, {2.0, 1.5, 2.0}), x[1]);
        },
        {L({1, 2, 2, 2, 3}, 138), L({1, 2, 4, 3, 6}, 139)});
    row("upsample_nearest 1d",
        [](const TensorList& x) { return mul(upsample_nearest(x[0], {9}), x[1]); },
        {L({2, 2, 4}, 140), L({2, 2, 9}, 141)});
    row("upsample_nearest 3d",
        [](const TensorList& x) {
          return mul(upsample_nearest(x[0], {4, 3, 5}), x[1]);
        },
        {L({1, 2, 2, 3, 2}, 142), L({1, 2, 4, 3, 5}, 143)});
    // PyTorch's legacy rule: a 1-D empty tensor takes no part in cat.
    row("cat skips 1-D empty tensors",
        [](const TensorList& x) {
          return cat({x[0], x[1], x[2]}, 1);
        },
        {L({0}, 101), L({2, 3, 4}, 102), L({2, 1, 4}, 103)});
  }

  void ops() {
    QFETCH(Fn, f);
    QFETCH(TensorList, inputs);
    const auto r = gradcheck(f, inputs);
    QVERIFY2(r.ok(),
             qPrintable(QString::fromStdString(r.where) +
                        QString(" (abs %1, rel %2)").arg(r.max_abs_error).arg(r.max_rel_error)));
  }
};

QTEST_APPLESS_MAIN(TestGradcheckNd)
#include "test_gradcheck_nd.moc"
