#pragma once

#include <cstdint>

#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

// C[m, n] = alpha * op(A)[m, k] @ op(B)[k, n] + beta * C, all row-major with leading
// dimensions (op = transpose when the flag is set, A then being stored [k, m]). Eigen's GEMM
// underneath; outside a parallel region, large products are split into independent blocks of
// the output across OpenMP threads. beta is 0 or 1.
template <typename T>
void gemm_rm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
             const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
             std::int64_t ldc);

extern template void gemm_rm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                    const float*, std::int64_t, const float*, std::int64_t, float,
                                    float*, std::int64_t);
extern template void gemm_rm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                     const double*, std::int64_t, const double*, std::int64_t,
                                     double, double*, std::int64_t);
// bfloat16 and float16, as oneDNN's reduced-precision GEMMs that PyTorch's CPU matmuls call:
// operands widened to float, products accumulated in float, C rounded once (the widened copies
// are the kernel's own buffers, as oneDNN's reorders are, not tensors).
template <>
void gemm_rm<bfloat16>(bool, bool, std::int64_t, std::int64_t, std::int64_t, bfloat16,
                       const bfloat16*, std::int64_t, const bfloat16*, std::int64_t, bfloat16,
                       bfloat16*, std::int64_t);
template <>
void gemm_rm<float16>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float16, const float16*,
                      std::int64_t, const float16*, std::int64_t, float16, float16*, std::int64_t);

}  // namespace ckpt
