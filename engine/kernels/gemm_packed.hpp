#pragma once

// A float32 GEMM for the convolutions' column tiles, where both operands are laid out for it:
// C[m, n] = A[m, k] B[k, n] with A packed once per call (panels of kPackedRows rows, k-major)
// and B written directly in panels of kPackedCols columns by im2col (conv_columns.cpp), so no
// operand is copied again per product. An 8 x 32 AVX-512 register block; Eigen's general GEMM
// packs B for every product and ran these shapes ([64, 1,728] x [1,728, 256]) at ~80 GFLOP/s on
// one AVX-512 core, this kernel at ~115. Written with the compiler's vector extensions, not
// intrinsics: every build runs it (slower without AVX-512) and allocates the same buffers, so a
// trace does not depend on the CPU that made it.

#include <cstdint>

namespace ckpt {

inline constexpr std::int64_t kPackedRows = 8;   // rows of A per panel
inline constexpr std::int64_t kPackedCols = 32;  // columns of B per panel

// Elements of A's packed form: m rounded up to whole panels, times k.
std::int64_t packed_a_size(std::int64_t m, std::int64_t k);
// A [m, k] row-major (leading dimension lda) into its packed form (rows past m are zero).
void pack_a(const float* a, std::int64_t m, std::int64_t k, std::int64_t lda, float* packed);

// C[m, n] (leading dimension ldc) = A B, or += with accumulate. A packed as pack_a packs it
// (panel i of kPackedRows rows at a + i * kPackedRows * k; its rows past m are computed but not
// stored); B in panels of kPackedCols columns, panel j at b + j * panel_stride, its row r at
// + r * kPackedCols (the last panel's columns past n likewise). Single-threaded.
void gemm_packed(const float* a_packed, std::int64_t m, std::int64_t k, const float* b,
                 std::int64_t panel_stride, std::int64_t n, float* c, std::int64_t ldc,
                 bool accumulate = false);

}  // namespace ckpt
