#pragma once

#include <cstdint>

#include "engine/cuda/hd.cuh"

namespace ckpt::cuda_math {

// The tiled GEMM of C[m, n] = A[m, k] @ B[k, n], in the pieces a thread block executes: load a
// kTile x kTile tile of A and of B (zero outside the matrices), then each thread (ty, tx)
// accumulates its element's dot product over the tile. The kernel stages the tiles in shared
// memory; the CPU tests run the same functions over every block and thread.
constexpr int kTile = 16;

// A matrix as the kernel reads it: element (r, c) at p[r * row_stride + c * col_stride], so a
// row-major operand and its transposed view are the same load.
struct MatrixView {
  const float* p;
  std::int64_t row_stride;
  std::int64_t col_stride;
};

CKPT_HD_INLINE float at(MatrixView v, std::int64_t r, std::int64_t c) {
  return v.p[r * v.row_stride + c * v.col_stride];
}

// Element (ty, tx) of the A tile at block row `brow`, step `t` (column offset t * kTile).
CKPT_HD_INLINE float load_a(MatrixView a, int m, int k, int brow, int t, int ty, int tx) {
  const int r = brow * kTile + ty, c = t * kTile + tx;
  return r < m && c < k ? at(a, r, c) : 0.0f;
}

// Element (ty, tx) of the B tile at step `t`, block column `bcol`.
CKPT_HD_INLINE float load_b(MatrixView b, int k, int n, int t, int bcol, int ty, int tx) {
  const int r = t * kTile + ty, c = bcol * kTile + tx;
  return r < k && c < n ? at(b, r, c) : 0.0f;
}

// Row-major operands, as the first kernels took them.
CKPT_HD_INLINE float load_a(const float* a, int m, int k, int brow, int t, int ty, int tx) {
  return load_a(MatrixView{a, k, 1}, m, k, brow, t, ty, tx);
}
CKPT_HD_INLINE float load_b(const float* b, int k, int n, int t, int bcol, int ty, int tx) {
  return load_b(MatrixView{b, n, 1}, k, n, t, bcol, ty, tx);
}

// One thread's share of one tile step: acc += As[ty, :] . Bs[:, tx].
CKPT_HD_INLINE float tile_dot(const float (&as)[kTile][kTile], const float (&bs)[kTile][kTile],
                              int ty, int tx, float acc) {
  for (int q = 0; q < kTile; ++q) acc += as[ty][q] * bs[q][tx];
  return acc;
}

CKPT_HD_INLINE int tile_steps(int k) {
  return (k + kTile - 1) / kTile;
}

// What a thread writes at the end: the product, or the product added to what C held.
CKPT_HD_INLINE float gemm_result(float acc, float previous, bool accumulate) {
  return accumulate ? previous + acc : acc;
}

}  // namespace ckpt::cuda_math
