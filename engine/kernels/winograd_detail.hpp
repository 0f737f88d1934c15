#pragma once

// Private to winograd.cpp (the plans, blocks and GEMMs) and winograd_transforms.cpp (the tile
// transforms they run between). The transforms are instantiated for float and double.

#include <cstdint>

namespace ckpt::conv_detail::winograd {

// The 16 matrices of a transformed tensor lie one after another, each a cache line further
// than its size: with an exact power-of-two spacing, the 16 streams that a transform reads or
// writes at once would all fall into the same cache set and evict each other.
constexpr std::int64_t kSkew = 16;
inline std::int64_t slice(std::int64_t elems) {
  return elems + kSkew;
}

// A stride-1 3x3 convolution from in [n, cin, h, w] to out [n, cout, ho, wo] with padding
// (ph, pw), cut into ty x tx output tiles of 2x2 per image.
struct Plan {
  std::int64_t n, cin, h, w, cout, ph, pw, ho, wo, ty, tx;
  std::int64_t tiles() const { return ty * tx; }
  // A zero-padded input plane that every tile's 4x4 window reads inside of.
  std::int64_t hp() const { return 2 * ty + 2; }
  std::int64_t wp() const { return 2 * tx + 2; }
  double macs() const {
    return static_cast<double>(n * ho * wo) * static_cast<double>(cin * cout * 9);
  }
};

// Per-thread scratch of the tile transforms: a padded plane, its eight phase planes, and four
// planes of one value per tile.
inline std::int64_t scratch_size(const Plan& p) {
  return p.hp() * p.wp() + 8 * (p.ty + 1) * p.tx + 4 * p.tiles();
}

// V[xi][c][m * tiles + t] = (B^T d B)[xi] for tile t of image n0 + m, channel c; ld = count *
// tiles columns per row. Tile t = (ty, tx) reads d[i][k] = pad[2 ty + i][2 tx + k]. The padded
// plane is first split into phase planes Q[a][b][s][y][x] = pad[2 y + a][2 (x + s) + b], where
// that value sits at index t + (i / 2) * tx of Q[i % 2][k % 2][k / 2]: the transform then runs
// along t with contiguous loads and stores (vectorised), whatever the plane's width.
template <typename T>
void transform_input(const Plan& p, const T* x, std::int64_t n0, std::int64_t count, T* V,
                     T* scratch);

// U[xi][o][c] = (G k G^T)[xi] for every kernel k = w[o, c] (3x3), along the kernels
// (vectorised: strided loads, contiguous stores). The input gradient needs the transform of
// the kernel rotated by 180 degrees, transposed: with J the 3x3 reversal, G J = P G where P
// swaps rows 0 and 3, so that transform is U[kFlip[xi]]^T and needs no pass of its own.
template <typename T>
void transform_weight(const T* w, std::int64_t kernels, T* U);

// out[n0 + m, o] = A^T M A (+ bias[o]) for every tile, M[xi][o][m * tiles + t]: computed along
// t into four planes y[a][b][t] (vectorised), then interleaved into the output rows.
template <typename T>
void transform_output(const Plan& p, const T* M, std::int64_t n0, std::int64_t count, const T* bias,
                      T* out, T* scratch);

// Mh[xi][o][m * tiles + t] = (A dY_t A^T)[xi]: the output transform's adjoint, for the weight
// gradient. dY is first split into four planes g[a][b][t] = dY[2 ty + a][2 tx + b] (zero past
// the output's edge, for odd sizes), then transformed along t.
template <typename T>
void adjoint_output(const Plan& p, const T* gy, std::int64_t n0, std::int64_t count, T* Mh,
                    T* scratch);

// dw[o, c] = G^T dU[o, c] G (3x3 from 4x4), dU[xi][o][c], along the kernels.
template <typename T>
void inverse_weight(const T* dU, std::int64_t kernels, T* dw);

}  // namespace ckpt::conv_detail::winograd
