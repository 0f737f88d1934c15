#include "engine/ops/blas.hpp"

#include <Eigen/Core>
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

template <typename T>
void gemm_rm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
             const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
             std::int64_t ldc) {
  if (beta != T(0) && beta != T(1)) throw std::invalid_argument("gemm_rm: beta must be 0 or 1");
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

template void gemm_rm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                             const float*, std::int64_t, const float*, std::int64_t, float, float*,
                             std::int64_t);
template void gemm_rm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                              const double*, std::int64_t, const double*, std::int64_t, double,
                              double*, std::int64_t);

}  // namespace ckpt
