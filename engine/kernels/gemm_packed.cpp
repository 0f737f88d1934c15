#include "engine/kernels/gemm_packed.hpp"

#include <algorithm>

namespace ckpt {

std::int64_t packed_a_size(std::int64_t m, std::int64_t k) {
  return (m + kPackedRows - 1) / kPackedRows * kPackedRows * k;
}

void pack_a(const float* a, std::int64_t m, std::int64_t k, std::int64_t lda, float* packed) {
  for (std::int64_t i0 = 0; i0 < m; i0 += kPackedRows) {
    float* panel = packed + i0 * k;
    const std::int64_t rows = std::min(kPackedRows, m - i0);
    for (std::int64_t kk = 0; kk < k; ++kk)
      for (std::int64_t r = 0; r < kPackedRows; ++r)
        panel[kk * kPackedRows + r] = r < rows ? a[(i0 + r) * lda + kk] : 0.0f;
  }
}

namespace {

// 16 floats, read from any 4-byte aligned address and aliasing float (as the intrinsics' types
// do): one AVX-512 register (two AVX2 ones elsewhere, where the compiler lowers the same code).
// GCC's vector extensions keep the kernel free of intrinsics, so every build computes the same
// thing with the same buffers.
typedef float Vec __attribute__((vector_size(64), aligned(4), may_alias));
constexpr int kLanes = 16;
constexpr int kRows = static_cast<int>(kPackedRows);
constexpr int kVectors = static_cast<int>(kPackedCols) / kLanes;

// One kRows x kPackedCols block of C over the whole depth k: 16 accumulators, two loads of B and
// eight broadcasts of A per step, in the order of k (each element of C is one running sum).
// Columns past `cols` are computed from whatever the panel holds there and not stored.
void block(const float* a, const float* b, std::int64_t k, float* c, std::int64_t ldc, int rows,
           int cols, bool accumulate) {
  Vec acc[kRows][kVectors] = {};
  for (std::int64_t kk = 0; kk < k; ++kk) {
    Vec bv[kVectors];
    for (int v = 0; v < kVectors; ++v)
      bv[v] = *reinterpret_cast<const Vec*>(b + kk * kPackedCols + kLanes * v);
    const float* ak = a + kk * kRows;
    for (int r = 0; r < kRows; ++r)
      for (int v = 0; v < kVectors; ++v) acc[r][v] += ak[r] * bv[v];
  }
  if (cols == kPackedCols) {
    for (int r = 0; r < rows; ++r)
      for (int v = 0; v < kVectors; ++v) {
        Vec* out = reinterpret_cast<Vec*>(c + r * ldc + kLanes * v);
        *out = accumulate ? *out + acc[r][v] : acc[r][v];
      }
    return;
  }
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      const float v = acc[r][j / kLanes][j % kLanes];
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + v : v;
    }
}

}  // namespace

void gemm_packed(const float* a_packed, std::int64_t m, std::int64_t k, const float* b,
                 std::int64_t panel_stride, std::int64_t n, float* c, std::int64_t ldc,
                 bool accumulate) {
  for (std::int64_t j = 0; j < n; j += kPackedCols) {
    const auto cols = static_cast<int>(std::min(kPackedCols, n - j));
    const float* bp = b + (j / kPackedCols) * panel_stride;
    for (std::int64_t i = 0; i < m; i += kPackedRows)
      block(a_packed + i * k, bp, k, c + i * ldc + j, ldc,
            static_cast<int>(std::min(kPackedRows, m - i)), cols, accumulate);
  }
}

}  // namespace ckpt
