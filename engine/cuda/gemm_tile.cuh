#pragma once

#include "engine/cuda/hd.cuh"

namespace ckpt::cuda_math {

// The tiled GEMM of C[m, n] = A[m, k] @ B[k, n] (row-major), in the pieces a thread block
// executes: load a kTile x kTile tile of A and of B (zero outside the matrices), then each
// thread (ty, tx) accumulates its element's dot product over the tile. The kernel stages the
// tiles in shared memory; the CPU tests run the same functions over every block and thread.
constexpr int kTile = 16;

// Element (ty, tx) of the A tile at block row `brow`, step `t` (column offset t * kTile).
CKPT_HD_INLINE float load_a(const float* a, int m, int k, int brow, int t, int ty, int tx) {
  const int r = brow * kTile + ty, c = t * kTile + tx;
  return r < m && c < k ? a[r * k + c] : 0.0f;
}

// Element (ty, tx) of the B tile at step `t`, block column `bcol`.
CKPT_HD_INLINE float load_b(const float* b, int k, int n, int t, int bcol, int ty, int tx) {
  const int r = t * kTile + ty, c = bcol * kTile + tx;
  return r < k && c < n ? b[r * n + c] : 0.0f;
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

}  // namespace ckpt::cuda_math
