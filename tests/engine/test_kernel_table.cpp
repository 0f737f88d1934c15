// The device seam's kernel half (engine/kernels/kernel_table.hpp): every device's table is
// whole; the entry points make the same allocations on every device (a dry run's trace equals a
// real run's because of it); the cuda rows equal the cpu rows on a real GPU. The cuda functions
// skip, visibly (QSKIP with the driver's reason), on a machine without one.
#include <QtTest>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/kernels/kernel_table.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/logical.hpp"
#include "engine/tensor/device.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/tensor/memory_ledger.hpp"

using namespace ckpt;

namespace {

Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(g.uniform() * 4 - 2);
  return Tensor::from_vector(v, shape);
}

// What a sequence of kernels allocated: count and peak bytes on a fresh ledger.
struct Footprint {
  std::int64_t allocations = 0;
  std::int64_t peak = 0;
};

// `t` copied onto `device`: one allocation there on every device.
Tensor place(const Tensor& t, Device device) {
  return device == Device::cpu ? contiguous_copy(t) : to_device(t, device);
}

// Every entry point of the table once or more, with the layouts that take different paths
// (broadcast, strided, transposed and non-BLAS operands); the results, moved to the cpu.
std::vector<Tensor> exercise(Device device, Footprint* footprint) {
  const Tensor a_host = random_tensor({33, 17}, 1);
  const Tensor b_host = random_tensor({33, 17}, 2);
  const Tensor s_host = random_tensor({1}, 3);
  const Tensor m_host = random_tensor({17, 9}, 4);
  const Tensor cube_host = random_tensor({3, 4, 5, 2}, 5);
  const Tensor mask_host = gt(random_tensor({5, 3}, 6), Tensor::scalar(0.0));  // bool: 1 B each
  auto ledger = std::make_shared<MemoryLedger>();
  std::vector<Tensor> results;
  {
    LedgerScope scope(ledger);
    DeviceScope on(device);
    const Tensor a = place(a_host, device);
    const Tensor b = place(b_host, device);
    const Tensor s = place(s_host, device);
    const Tensor m = place(m_host, device);
    results.push_back(add_raw(a, b));
    results.push_back(sub_raw(a, s));
    results.push_back(mul_raw(s, b));
    results.push_back(div_raw(a, add_scalar_raw(b, 3.0)));
    results.push_back(mul_scalar_raw(a, -0.5));
    Tensor acc = contiguous_copy(a);
    add_inplace_raw(acc, b);
    results.push_back(acc);
    Tensor filled = Tensor::empty({5, 3}, DType::f32);
    fill_raw(filled, 1.25);
    results.push_back(filled);
    results.push_back(Tensor::zeros({4}, DType::f32));
    results.push_back(Tensor::full({2, 2}, -7.0, DType::f32));
    results.push_back(matmul2d_raw(a, m));                       // row-major
    results.push_back(matmul2d_raw(transpose_raw(b, 0, 1), a));  // transposed view [17, 33]
    Tensor c = matmul2d_raw(a, m);
    gemm_raw(a, m, c, /*accumulate=*/true);
    results.push_back(c);
    results.push_back(sum_dims_raw(a, {0}, false));
    results.push_back(sum_dims_raw(a, {}, false));
    const Tensor cube = place(cube_host, device);
    results.push_back(sum_dims_raw(cube, {1, 3}, true));
    results.push_back(contiguous_copy(transpose_raw(a, 0, 1)));
    results.push_back(contiguous_copy(transpose_raw(place(mask_host, device), 0, 1)));
    Tensor strided_dst = Tensor::zeros({17, 33}, DType::f32);
    Tensor into = transpose_raw(strided_dst, 0, 1);  // a strided destination
    copy_into_raw(into, b);
    results.push_back(strided_dst);
    if (footprint) *footprint = {ledger->allocation_count(), ledger->peak_bytes()};
  }
  for (auto& r : results) r = to_device(r, Device::cpu);
  return results;
}

void expect_close(const Tensor& got, const Tensor& want, double rel, int index) {
  QCOMPARE(got.shape(), want.shape());
  const auto g = got.to_vector();
  const auto w = want.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i)
    if (std::abs(g[i] - w[i]) > rel * (1 + std::abs(w[i])))
      QFAIL(qPrintable(
          QString("result %1, element %2: %3 vs %4").arg(index).arg(i).arg(g[i]).arg(w[i])));
}

template <typename F>
QString error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

bool cuda_here(QString* why) {
  std::string reason;
  const bool ok = device_available(Device::cuda, &reason);
  *why = QString::fromStdString(reason);
  return ok;
}

}  // namespace

class TestKernelTable : public QObject {
  Q_OBJECT
 private slots:
  void everyDeviceTableIsWhole() {
    std::vector<const KernelTable*> tables{&cpu_kernel_table(), &meta_kernel_table()};
#ifdef CKPTLAB_HAVE_CUDA
    tables.push_back(&cuda_kernel_table());
#endif
    for (const KernelTable* t : tables) {
      QVERIFY(t->name && *t->name);
      QCOMPARE(QString(t->name), QString(device_name(t->device)));
      QVERIFY(t->copy && t->fill && t->binary && t->binary_scalar && t->accumulate && t->sum &&
              t->gemm);
    }
    QCOMPARE(&kernel_table(Device::cpu), &cpu_kernel_table());
    QCOMPARE(&kernel_table(Device::meta), &meta_kernel_table());
  }

  // sum over dims between kept ones (a per-channel parameter's gradient, [N, C, H, W] to
  // [1, C, 1, 1]) adds in double: float32 sums of N*H*W terms added one by one lost digits (its
  // gradient was 5 to 20 times PyTorch's float32 error). Every layout the paths take: a prefix,
  // a suffix, interleaved dims, all; each element against a double-precision reference.
  void sumsAddInDouble_data() {
    QTest::addColumn<std::vector<std::int64_t>>("dims");
    QTest::newRow("per channel") << std::vector<std::int64_t>{0, 2, 3};
    QTest::newRow("batch and width") << std::vector<std::int64_t>{0, 3};
    QTest::newRow("prefix") << std::vector<std::int64_t>{0, 1};
    QTest::newRow("suffix") << std::vector<std::int64_t>{2, 3};
    QTest::newRow("channel only") << std::vector<std::int64_t>{1};
    QTest::newRow("all") << std::vector<std::int64_t>{0, 1, 2, 3};
  }
  void sumsAddInDouble() {
    QFETCH(std::vector<std::int64_t>, dims);
    const Shape shape{16, 3, 64, 64};
    Generator g(5);
    std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
    for (auto& x : v) x = static_cast<float>(0.1 + 0.01 * g.uniform());  // no cancellation
    const Tensor t = Tensor::from_vector(v, shape);
    const Tensor s = sum_dims_raw(t, dims, true);
    const Tensor exact = sum_dims_raw(
        Tensor::from_vector(std::vector<double>(v.begin(), v.end()), shape), dims, true);
    const auto got = s.to_vector(), want = exact.to_vector();
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - want[i]) <= 1e-7 * std::abs(want[i]),
               qPrintable(QString("element %1: %2, exactly %3")
                              .arg(i)
                              .arg(got[i], 0, 'g', 9)
                              .arg(want[i], 0, 'g', 12)));
  }

  // The cpu copy by contiguous blocks (cat's channel regions, their gradient's slices): every
  // element lands where index arithmetic says, for blocks copied serially and in parallel, a
  // size-1 dimension with an odd stride, and a transposed view (no blocks: element by element).
  void stridedCopiesLandWhereTheIndicesSay_data() {
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("plane");
    QTest::newRow("serial blocks") << 2 << 3 << 80;
    QTest::newRow("parallel blocks") << 8 << 64 << 1024;
  }
  void stridedCopiesLandWhereTheIndicesSay() {
    QFETCH(int, batch);
    QFETCH(int, channels);
    QFETCH(int, plane);
    const std::int64_t n = batch, c = channels, p = plane, total_c = 2 * c + 3;
    const Tensor src = random_tensor({n, c, p}, 11);
    Tensor big = Tensor::zeros({n, total_c, p});
    // Channels [2, 2 + c) of `big`: a region whose images are blocks of c * p elements.
    Tensor region = big.alias({n, c, p}, big.strides(), 2 * p);
    copy_into_raw(region, src);
    const auto got = big.to_vector(), want = src.to_vector();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t ch = 0; ch < total_c; ++ch)
        for (std::int64_t k = 0; k < p; ++k) {
          const double expected =
              ch >= 2 && ch < 2 + c ? want[static_cast<std::size_t>((i * c + ch - 2) * p + k)] : 0;
          if (got[static_cast<std::size_t>((i * total_c + ch) * p + k)] != expected)
            QFAIL(qPrintable(QString("image %1 channel %2 element %3").arg(i).arg(ch).arg(k)));
        }
    // Back out as CatBackward slices it: a contiguous copy of the region.
    QCOMPARE(contiguous_copy(region).to_vector(), want);
    // A size-1 dimension's stride says nothing about contiguity.
    const Tensor one = src.alias({n, 1, c * p}, {c * p, 12345, 1}, 0);
    QCOMPARE(contiguous_copy(one).to_vector(), want);
    // Transposed: no contiguous block in common, element by element.
    const Tensor t = src.alias({n, p, c}, {c * p, 1, p}, 0);
    const auto tv = contiguous_copy(t).to_vector();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < p; ++k)
        for (std::int64_t ch = 0; ch < c; ++ch)
          QCOMPARE(tv[static_cast<std::size_t>((i * p + k) * c + ch)],
                   want[static_cast<std::size_t>((i * c + ch) * p + k)]);
  }

  // The dry run's exactness rests on this: meta makes every buffer the cpu makes, computes
  // nothing, and its results are meta tensors.
  void metaAllocatesWhatTheCpuAllocates() {
    Footprint cpu, meta;
    const auto real = exercise(Device::cpu, &cpu);
    QVERIFY2(cpu.allocations >= 15, qPrintable(QString::number(cpu.allocations)));
    QVERIFY(cpu.peak > 0);
    auto ledger = std::make_shared<MemoryLedger>();
    {
      LedgerScope scope(ledger);
      DeviceScope on(Device::meta);
      const Tensor a = Tensor::empty({3, 2}, DType::f32);
      QVERIFY(a.is_meta() && add_raw(a, a).is_meta());
    }
    // Meta results have no values to bring back to the cpu: the move refuses, after the count.
    const QString back = error_of([&] { exercise(Device::meta, &meta); });
    QVERIFY2(back.contains("meta") && back.contains("no values"), qPrintable(back));
    QCOMPARE(meta.allocations, cpu.allocations);
    QCOMPARE(meta.peak, cpu.peak);
    QCOMPARE(real.size(), std::size_t{18});
    // A row's cpu arithmetic, spot-checked: a + b in float32.
    const auto a5 = static_cast<float>(random_tensor({33, 17}, 1).to_vector()[5]);
    const auto b5 = static_cast<float>(random_tensor({33, 17}, 2).to_vector()[5]);
    QCOMPARE(static_cast<float>(real[0].to_vector()[5]), a5 + b5);
  }

  void tensorsOnTwoDevicesAreRefused() {
    const Tensor a = Tensor::ones({2}, DType::f32);
    Tensor b;
    {
      DeviceScope on(Device::meta);
      b = Tensor::ones({2}, DType::f32);
    }
    const QString e = error_of([&] { add_raw(a, b); });
    QVERIFY2(e.contains("same device") && e.contains("cpu") && e.contains("meta"), qPrintable(e));
  }

  void cudaWithoutABackendSaysWhy() {
    QString why;
    if (cuda_here(&why)) QSKIP("a CUDA device is present: the refusal cannot be seen here");
    QVERIFY(!why.isEmpty());
    const QString e = error_of([] { DeviceScope on(Device::cuda); });
    QVERIFY2(e.contains("cuda") && e.contains(why), qPrintable(e));
    const QString k = error_of([] { kernel_table(Device::cuda); });
    QVERIFY2(k.contains(why), qPrintable(k));
  }

  // On a GPU: every cuda row against the cpu row on the same inputs (float32; the product's
  // sums in another order, hence the tolerance), and the same ledger footprint.
  void cudaRowsEqualTheCpuRows() {
    QString why;
    if (!cuda_here(&why)) QSKIP(qPrintable(why));
    Footprint cpu, cuda;
    const auto want = exercise(Device::cpu, &cpu);
    const auto got = exercise(Device::cuda, &cuda);
    QCOMPARE(got.size(), std::size_t{18});
    for (std::size_t i = 0; i < got.size(); ++i)
      expect_close(got[i], want[i], 1e-5, static_cast<int>(i));
    // Device memory is ledger events, the same ones as on the cpu.
    QCOMPARE(cuda.allocations, cpu.allocations);
    QCOMPARE(cuda.peak, cpu.peak);
    qInfo("ledger: cpu %lld allocations, peak %lld B; cuda %lld allocations, peak %lld B",
          static_cast<long long>(cpu.allocations), static_cast<long long>(cpu.peak),
          static_cast<long long>(cuda.allocations), static_cast<long long>(cuda.peak));
  }

  void cudaGemmAtOddSizes() {
    QString why;
    if (!cuda_here(&why)) QSKIP(qPrintable(why));
    const std::vector<std::array<std::int64_t, 3>> sizes{
        {1, 1, 1}, {7, 33, 5}, {65, 17, 129}, {128, 256, 64}, {3, 1000, 2}};
    std::uint64_t seed = 10;
    for (const auto& [m, k, n] : sizes) {
      const Tensor a = random_tensor({m, k}, ++seed);
      const Tensor bt = random_tensor({n, k}, ++seed);
      const Tensor b = transpose_raw(bt, 0, 1);  // a column-major operand
      const Tensor want = matmul2d_raw(a, b);
      Tensor got;
      {
        DeviceScope on(Device::cuda);
        got = to_device(matmul2d_raw(to_device(a, Device::cuda),
                                     transpose_raw(to_device(bt, Device::cuda), 0, 1)),
                        Device::cpu);
      }
      expect_close(got, want, 1e-4, static_cast<int>(m));
    }
  }

  // Cases the cuda rows do not cover yet, and op loops that run on the host, refuse a device
  // tensor naming the device: never a read of device memory from the host, never another sum.
  void cudaMissingCasesNameTheDevice() {
    QString why;
    if (!cuda_here(&why)) QSKIP(qPrintable(why));
    const Tensor host = random_tensor({4, 5}, 10);
    DeviceScope on(Device::cuda);
    const Tensor x = to_device(random_tensor({4, 5}, 7), Device::cuda);
    const QString loop =
        error_of([&] { unary_map<float>(x, [](float v) { return v < 0 ? 0.0f : v; }); });
    QVERIFY2(loop.contains("cuda device") && loop.contains("host"), qPrintable(loop));
    const QString cast = error_of([&] { cast_raw(x, DType::f64); });
    QVERIFY2(cast.contains("cast") && cast.contains("cuda kernel"), qPrintable(cast));
    const Tensor col = to_device(random_tensor({4, 1}, 8), Device::cuda);
    const Tensor row = to_device(random_tensor({1, 5}, 9), Device::cuda);
    const QString broadcast = error_of([&] { add_raw(col, row); });
    QVERIFY2(broadcast.contains("broadcast") && broadcast.contains("cuda"), qPrintable(broadcast));
    QCOMPARE(host.device(), Device::cpu);
    const QString mixed = error_of([&] { add_raw(x, host); });
    QVERIFY2(mixed.contains("same device"), qPrintable(mixed));
  }
};

QTEST_GUILESS_MAIN(TestKernelTable)
#include "test_kernel_table.moc"
