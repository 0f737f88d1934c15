#include "engine/kernels/blas.hpp"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <stdexcept>

namespace ckpt {

namespace {
template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <typename T>
using CRowMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
// A row-major [k, m] block read as its transpose: a column-major [m, k] map, no copy.
template <typename T>
using CColMap = Eigen::Map<const ColMat<T>, 0, Eigen::OuterStride<>>;
}  // namespace

namespace {

// Below this many multiply-adds per thread, a thread team costs more than it saves.
constexpr double kMinMacsPerThread = 1 << 18;

// One single-threaded Eigen product.
template <typename T>
void gemm_serial(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                 T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                 std::int64_t ldc) {
  Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    if (beta == T(0)) C.setZero();
    return;
  }
  auto run = [&](const auto& A, const auto& B) {
    if (beta == T(0)) {
      if (alpha == T(1))
        C.noalias() = A * B;
      else
        C.noalias() = alpha * (A * B);
    } else {
      if (alpha == T(1))
        C.noalias() += A * B;
      else
        C.noalias() += alpha * (A * B);
    }
  };
  auto with_b = [&](const auto& A) {
    if (trans_b)
      run(A, CColMap<T>(b, k, n, Eigen::OuterStride<>(ldb)));
    else
      run(A, CRowMap<T>(b, k, n, Eigen::OuterStride<>(ldb)));
  };
  if (trans_a)
    with_b(CColMap<T>(a, m, k, Eigen::OuterStride<>(lda)));
  else
    with_b(CRowMap<T>(a, m, k, Eigen::OuterStride<>(lda)));
}

}  // namespace

template <typename T>
void gemm_rm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
             const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
             std::int64_t ldc) {
  if (beta != T(0) && beta != T(1)) throw std::invalid_argument("gemm_rm: beta must be 0 or 1");
  // Eigen's own multi-threaded GEMM has its threads spin-wait on each other for shared packed
  // blocks, which collapses when the cores are oversubscribed. Instead the output is split into
  // independent blocks of columns (or rows), each one single-threaded product.
  static const bool serial_eigen = (Eigen::setNbThreads(1), true);
  (void)serial_eigen;
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = omp_in_parallel() ? 1
                                        : static_cast<int>(std::clamp<double>(
                                              macs / kMinMacsPerThread, 1, omp_get_max_threads()));
  if (threads <= 1) {
    gemm_serial<T>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool split_cols = n >= m;
  const std::int64_t extent = split_cols ? n : m;
  // Chunks in multiples of 16 (a full AVX-512 vector of floats).
  const std::int64_t chunk = ((extent + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const std::int64_t lo = std::min(extent, t * chunk), hi = std::min(extent, lo + chunk);
    if (lo >= hi) continue;
    if (split_cols) {
      // Columns [lo, hi) of B and C; B stored transposed keeps its columns as rows.
      gemm_serial<T>(trans_a, trans_b, m, hi - lo, k, alpha, a, lda,
                     trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
    } else {
      gemm_serial<T>(trans_a, trans_b, hi - lo, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda,
                     b, ldb, beta, c + lo * ldc, ldc);
    }
  }
}

template void gemm_rm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                             const float*, std::int64_t, const float*, std::int64_t, float, float*,
                             std::int64_t);
template void gemm_rm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                              const double*, std::int64_t, const double*, std::int64_t, double,
                              double*, std::int64_t);

}  // namespace ckpt
