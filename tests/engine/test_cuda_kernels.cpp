// The CUDA kernels on a real device, against the same arithmetic run on the host. Built only
// with the CUDA backend; without a device it exits with kSkip, which CTest reports as skipped
// (SKIP_RETURN_CODE), never as passed.
#include <QtTest>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/cuda/cuda_api.hpp"
#include "engine/cuda/elementwise.cuh"
#include "engine/cuda/softmax.cuh"
#include "engine/ops/ops.hpp"
#include "engine/tensor/generator.hpp"

namespace {

constexpr int kSkip = 77;

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  ckpt::Generator g(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(g.uniform() * 6 - 3);
  return v;
}

// A device buffer holding a copy of host values.
struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t n) : n(n), p(ckpt::cuda::device_alloc(n * sizeof(float))) {}
  DeviceBuffer(const std::vector<float>& v) : DeviceBuffer(v.size()) {
    ckpt::cuda::copy_to_device(p, v.data(), n * sizeof(float));
  }
  ~DeviceBuffer() { ckpt::cuda::device_free(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* f() const { return static_cast<float*>(p); }
  std::vector<float> host() const {
    std::vector<float> v(n);
    ckpt::cuda::copy_to_host(v.data(), p, n * sizeof(float));
    return v;
  }
  std::size_t n;
  void* p;
};

void close(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  QCOMPARE(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > tol * (1 + std::abs(want[i])))
      QFAIL(qPrintable(QString("element %1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
}

}  // namespace

class TestCudaKernels : public QObject {
  Q_OBJECT
 private slots:
  void elementwise() {
    const std::size_t n = 100003;
    const auto a = random_values(n, 1), b = random_values(n, 2);
    DeviceBuffer da(a), db(b), out(n);
    std::vector<float> want(n);
    ckpt::cuda::add(da.f(), db.f(), out.f(), static_cast<std::int64_t>(n));
    for (std::size_t i = 0; i < n; ++i) want[i] = ckpt::cuda_math::add(a[i], b[i]);
    close(out.host(), want, 0);
    ckpt::cuda::mul(da.f(), db.f(), out.f(), static_cast<std::int64_t>(n));
    for (std::size_t i = 0; i < n; ++i) want[i] = ckpt::cuda_math::mul(a[i], b[i]);
    close(out.host(), want, 0);
    ckpt::cuda::relu(da.f(), out.f(), static_cast<std::int64_t>(n));
    for (std::size_t i = 0; i < n; ++i) want[i] = ckpt::cuda_math::relu(a[i]);
    close(out.host(), want, 0);
    ckpt::cuda::gelu(da.f(), out.f(), static_cast<std::int64_t>(n));
    for (std::size_t i = 0; i < n; ++i) want[i] = ckpt::cuda_math::gelu(a[i]);
    close(out.host(), want, 1e-6f);
  }

  void softmaxRows() {
    const int rows = 513, n = 77;
    const auto x = random_values(static_cast<std::size_t>(rows) * n, 3);
    DeviceBuffer dx(x), dy(x.size());
    ckpt::cuda::softmax_rows(dx.f(), dy.f(), rows, n);
    std::vector<float> want(x.size());
    for (int r = 0; r < rows; ++r)
      ckpt::cuda_math::softmax_row(x.data() + r * n, want.data() + r * n, n);
    close(dy.host(), want, 1e-6f);
  }

  void gemmMatchesTheEngine() {
    const int m = 70, n = 45, k = 33;
    const auto a = random_values(static_cast<std::size_t>(m) * k, 4);
    const auto b = random_values(static_cast<std::size_t>(k) * n, 5);
    DeviceBuffer da(a), db(b), dc(static_cast<std::size_t>(m) * n);
    ckpt::cuda::gemm(da.f(), db.f(), dc.f(), m, n, k);
    const auto want =
        ckpt::matmul(ckpt::Tensor::from_vector(a, {m, k}), ckpt::Tensor::from_vector(b, {k, n}))
            .to_vector();
    close(dc.host(), std::vector<float>(want.begin(), want.end()), 1e-4f);
  }
};

int main(int argc, char** argv) {
  if (ckpt::cuda::device_count() == 0) {
    std::printf("test_cuda_kernels skipped: %s\n", ckpt::cuda::device_summary().c_str());
    return kSkip;
  }
  std::printf("CUDA device: %s\n", ckpt::cuda::device_summary().c_str());
  TestCudaKernels t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_cuda_kernels.moc"
