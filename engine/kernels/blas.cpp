#include "engine/kernels/blas.hpp"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <stdexcept>
#include <vector>

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

namespace {

// A stored rows x cols block with leading dimension ld, widened into a dense float one.
template <typename T>
std::vector<float> widen(const T* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
#pragma omp parallel for if (rows * cols > 32768 && !omp_in_parallel()) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j)
      out[static_cast<std::size_t>(r * cols + j)] = static_cast<float>(p[r * ld + j]);
  return out;
}

template <typename T>
void gemm_widened(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                  T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                  std::int64_t ldc) {
  const std::int64_t ar = trans_a ? k : m, ac = trans_a ? m : k;
  const std::int64_t br = trans_b ? n : k, bc = trans_b ? k : n;
  const std::vector<float> af = widen(a, ar, ac, lda), bf = widen(b, br, bc, ldb);
  std::vector<float> cf = static_cast<float>(beta) != 0.0f
                              ? widen(c, m, n, ldc)
                              : std::vector<float>(static_cast<std::size_t>(m * n));
  gemm_rm<float>(trans_a, trans_b, m, n, k, static_cast<float>(alpha), af.data(),
                 std::max<std::int64_t>(ac, 1), bf.data(), std::max<std::int64_t>(bc, 1),
                 static_cast<float>(beta), cf.data(), std::max<std::int64_t>(n, 1));
#pragma omp parallel for if (m * n > 32768 && !omp_in_parallel()) schedule(static)
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t j = 0; j < n; ++j)
      c[r * ldc + j] = static_cast<T>(cf[static_cast<std::size_t>(r * n + j)]);
}

}  // namespace

template <>
void gemm_rm<bfloat16>(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                       bfloat16 alpha, const bfloat16* a, std::int64_t lda, const bfloat16* b,
                       std::int64_t ldb, bfloat16 beta, bfloat16* c, std::int64_t ldc) {
  gemm_widened(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <>
void gemm_rm<float16>(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                      float16 alpha, const float16* a, std::int64_t lda, const float16* b,
                      std::int64_t ldb, float16 beta, float16* c, std::int64_t ldc) {
  gemm_widened(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void gemm_rm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                             const float*, std::int64_t, const float*, std::int64_t, float, float*,
                             std::int64_t);
template void gemm_rm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                              const double*, std::int64_t, const double*, std::int64_t, double,
                              double*, std::int64_t);

}  // namespace ckpt
