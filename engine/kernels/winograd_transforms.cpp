#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/kernels.hpp"
#include "engine/kernels/winograd_detail.hpp"

// The tile transforms of Winograd F(2x2, 3x3): input (B^T d B), weight (G k G^T), output
// (A^T M A), and the adjoints the weight gradient needs. Each runs along tiles or kernels with
// contiguous loads and stores, so that it vectorises.

namespace ckpt::conv_detail::winograd {

namespace {

// dst [hp, wp] = src [h, w] shifted down by `top` and right by `left`, zero elsewhere.
template <typename T>
void pad_plane(const T* src, std::int64_t h, std::int64_t w, std::int64_t top, std::int64_t left,
               std::int64_t hp, std::int64_t wp, T* dst) {
  const std::int64_t inner = std::clamp<std::int64_t>(wp - left, 0, w);
  for (std::int64_t r = 0; r < hp; ++r) {
    T* row = dst + r * wp;
    const std::int64_t sr = r - top;
    if (sr < 0 || sr >= h) {
      std::fill(row, row + wp, T(0));
      continue;
    }
    std::fill(row, row + std::min(left, wp), T(0));
    std::memcpy(row + left, src + sr * w, static_cast<std::size_t>(inner) * sizeof(T));
    std::fill(row + std::min(wp, left + inner), row + wp, T(0));
  }
}

}  // namespace

// V[xi][c][m * tiles + t] = (B^T d B)[xi] for tile t of image n0 + m, channel c; ld = count *
// tiles columns per row. Tile t = (ty, tx) reads d[i][k] = pad[2 ty + i][2 tx + k]. The padded
// plane is first split into phase planes Q[a][b][s][y][x] = pad[2 y + a][2 (x + s) + b], where
// that value sits at index t + (i / 2) * tx of Q[i % 2][k % 2][k / 2]: the transform then runs
// along t with contiguous loads and stores (vectorised), whatever the plane's width.
template <typename T>
void transform_input(const Plan& p, const T* x, std::int64_t n0, std::int64_t count, T* V,
                     T* scratch) {
  const std::int64_t ld = count * p.tiles(), xs = slice(p.cin * ld), wp = p.wp();
  const std::int64_t qn = (p.ty + 1) * p.tx, tiles = p.tiles(), tx = p.tx;
  T* pad = scratch;
  T* q = pad + p.hp() * wp;
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t c = 0; c < p.cin; ++c) {
      pad_plane(x + ((n0 + m) * p.cin + c) * p.h * p.w, p.h, p.w, p.ph, p.pw, p.hp(), wp, pad);
      for (int a = 0; a < 2; ++a)
        for (std::int64_t y = 0; y <= p.ty; ++y) {
          const T* __restrict row = pad + (2 * y + a) * wp;
          for (int bs = 0; bs < 4; ++bs) {  // b = bs % 2, s = bs / 2: column 2 x + bs
            T* __restrict dst = q + (a * 4 + bs) * qn + y * tx;
#pragma omp simd
            for (std::int64_t i = 0; i < tx; ++i) dst[i] = row[2 * i + bs];
          }
        }
      // Q[a][b][s] = q + (a * 4 + s * 2 + b) * qn; d[i][k] = Q[i % 2][k % 2][k / 2][t + i/2 tx]
      const T* __restrict d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 4; ++k) d[i][k] = q + ((i % 2) * 4 + k) * qn + (i / 2) * tx;
      T* __restrict v = V + c * ld + m * tiles;
#pragma omp simd
      for (std::int64_t t = 0; t < tiles; ++t) {
        T r[4][4];  // B^T d: combinations of rows
        for (int k = 0; k < 4; ++k) {
          r[0][k] = d[0][k][t] - d[2][k][t];
          r[1][k] = d[1][k][t] + d[2][k][t];
          r[2][k] = d[2][k][t] - d[1][k][t];
          r[3][k] = d[1][k][t] - d[3][k][t];
        }
        for (int i = 0; i < 4; ++i) {  // (B^T d) B: the same on columns
          v[(4 * i + 0) * xs + t] = r[i][0] - r[i][2];
          v[(4 * i + 1) * xs + t] = r[i][1] + r[i][2];
          v[(4 * i + 2) * xs + t] = r[i][2] - r[i][1];
          v[(4 * i + 3) * xs + t] = r[i][1] - r[i][3];
        }
      }
    }
  }
}

// U[xi][o][c] = (G k G^T)[xi] for every kernel k = w[o, c] (3x3), along the kernels
// (vectorised: strided loads, contiguous stores). The input gradient needs the transform of
// the kernel rotated by 180 degrees, transposed: with J the 3x3 reversal, G J = P G where P
// swaps rows 0 and 3, so that transform is U[kFlip[xi]]^T and needs no pass of its own.
template <typename T>
void transform_weight(const T* w, std::int64_t kernels, T* U) {
  const std::int64_t xs = slice(kernels);
  const T h = T(0.5);
#pragma omp parallel for simd schedule(static) if (kernels * 16 > kParallelGrain && \
                                                   !omp_in_parallel())
  for (std::int64_t at = 0; at < kernels; ++at) {
    const T* g = w + at * 9;
    T a[4][3];  // G k
    for (int j = 0; j < 3; ++j) {
      a[0][j] = g[j];
      a[1][j] = h * (g[j] + g[3 + j] + g[6 + j]);
      a[2][j] = h * (g[j] - g[3 + j] + g[6 + j]);
      a[3][j] = g[6 + j];
    }
    for (int i = 0; i < 4; ++i) {  // (G k) G^T
      U[(4 * i + 0) * xs + at] = a[i][0];
      U[(4 * i + 1) * xs + at] = h * (a[i][0] + a[i][1] + a[i][2]);
      U[(4 * i + 2) * xs + at] = h * (a[i][0] - a[i][1] + a[i][2]);
      U[(4 * i + 3) * xs + at] = a[i][2];
    }
  }
}

// out[n0 + m, o] = A^T M A (+ bias[o]) for every tile, M[xi][o][m * tiles + t]: computed along
// t into four planes y[a][b][t] (vectorised), then interleaved into the output rows.
template <typename T>
void transform_output(const Plan& p, const T* M, std::int64_t n0, std::int64_t count, const T* bias,
                      T* out, T* scratch) {
  const std::int64_t ld = count * p.tiles(), xs = slice(p.cout * ld), tiles = p.tiles();
  const std::int64_t full_x = p.wo / 2;
  T* __restrict y = scratch + p.hp() * p.wp() + 8 * (p.ty + 1) * p.tx;
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t o = 0; o < p.cout; ++o) {
      const T* __restrict s = M + o * ld + m * tiles;
      const T b = bias ? bias[o] : T(0);
#pragma omp simd
      for (std::int64_t t = 0; t < tiles; ++t) {
        T q[4][2];  // m A: per row of the tile
        for (int i = 0; i < 4; ++i) {
          const T m0 = s[(4 * i + 0) * xs + t], m1 = s[(4 * i + 1) * xs + t];
          const T m2 = s[(4 * i + 2) * xs + t], m3 = s[(4 * i + 3) * xs + t];
          q[i][0] = m0 + m1 + m2;
          q[i][1] = m1 - m2 - m3;
        }
        for (int j = 0; j < 2; ++j) {
          y[j * tiles + t] = q[0][j] + q[1][j] + q[2][j] + b;
          y[(2 + j) * tiles + t] = q[1][j] - q[2][j] - q[3][j] + b;
        }
      }
      T* plane = out + ((n0 + m) * p.cout + o) * p.ho * p.wo;
      for (std::int64_t ty = 0; ty < p.ty; ++ty) {
        for (int a = 0; a < 2 && 2 * ty + a < p.ho; ++a) {
          T* __restrict row = plane + (2 * ty + a) * p.wo;
          const T* __restrict y0 = y + (2 * a) * tiles + ty * p.tx;
          const T* __restrict y1 = y0 + tiles;
#pragma omp simd
          for (std::int64_t x = 0; x < full_x; ++x) {
            row[2 * x] = y0[x];
            row[2 * x + 1] = y1[x];
          }
          if (full_x < p.tx) row[2 * full_x] = y0[full_x];  // odd width
        }
      }
    }
  }
}

// Mh[xi][o][m * tiles + t] = (A dY_t A^T)[xi]: the output transform's adjoint, for the weight
// gradient. dY is first split into four planes g[a][b][t] = dY[2 ty + a][2 tx + b] (zero past
// the output's edge, for odd sizes), then transformed along t.
template <typename T>
void adjoint_output(const Plan& p, const T* gy, std::int64_t n0, std::int64_t count, T* Mh,
                    T* scratch) {
  const std::int64_t ld = count * p.tiles(), xs = slice(p.cout * ld), tiles = p.tiles();
  const std::int64_t full_x = p.wo / 2;
  T* __restrict g = scratch + p.hp() * p.wp() + 8 * (p.ty + 1) * p.tx;
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t o = 0; o < p.cout; ++o) {
      const T* plane = gy + ((n0 + m) * p.cout + o) * p.ho * p.wo;
      for (std::int64_t ty = 0; ty < p.ty; ++ty) {
        for (int a = 0; a < 2; ++a) {
          T* __restrict g0 = g + (2 * a) * tiles + ty * p.tx;
          T* __restrict g1 = g0 + tiles;
          if (2 * ty + a >= p.ho) {
            std::fill(g0, g0 + p.tx, T(0));
            std::fill(g1, g1 + p.tx, T(0));
            continue;
          }
          const T* __restrict row = plane + (2 * ty + a) * p.wo;
#pragma omp simd
          for (std::int64_t x = 0; x < full_x; ++x) {
            g0[x] = row[2 * x];
            g1[x] = row[2 * x + 1];
          }
          if (full_x < p.tx) {
            g0[full_x] = row[2 * full_x];
            g1[full_x] = T(0);
          }
        }
      }
      const T* __restrict a0 = g;
      const T* __restrict a1 = g + tiles;
      const T* __restrict b0 = g + 2 * tiles;
      const T* __restrict b1 = g + 3 * tiles;
      T* __restrict d = Mh + o * ld + m * tiles;
#pragma omp simd
      for (std::int64_t t = 0; t < tiles; ++t) {
        const T r[2][4] = {{a0[t], a0[t] + a1[t], a0[t] - a1[t], -a1[t]},
                           {b0[t], b0[t] + b1[t], b0[t] - b1[t], -b1[t]}};
        for (int j = 0; j < 4; ++j) {
          d[(0 + j) * xs + t] = r[0][j];
          d[(4 + j) * xs + t] = r[0][j] + r[1][j];
          d[(8 + j) * xs + t] = r[0][j] - r[1][j];
          d[(12 + j) * xs + t] = -r[1][j];
        }
      }
    }
  }
}

// dw[o, c] = G^T dU[o, c] G (3x3 from 4x4), dU[xi][o][c], along the kernels.
template <typename T>
void inverse_weight(const T* dU, std::int64_t kernels, T* dw) {
  const std::int64_t xs = slice(kernels);
  const T h = T(0.5);
#pragma omp parallel for simd schedule(static) if (kernels * 16 > kParallelGrain && \
                                                   !omp_in_parallel())
  for (std::int64_t at = 0; at < kernels; ++at) {
    T a[3][4];  // G^T u
    for (int j = 0; j < 4; ++j) {
      const T u0 = dU[j * xs + at], u1 = dU[(4 + j) * xs + at];
      const T u2 = dU[(8 + j) * xs + at], u3 = dU[(12 + j) * xs + at];
      a[0][j] = u0 + h * (u1 + u2);
      a[1][j] = h * (u1 - u2);
      a[2][j] = h * (u1 + u2) + u3;
    }
    T* k = dw + at * 9;
    for (int i = 0; i < 3; ++i) {  // (G^T u) G
      k[i * 3 + 0] = a[i][0] + h * (a[i][1] + a[i][2]);
      k[i * 3 + 1] = h * (a[i][1] - a[i][2]);
      k[i * 3 + 2] = h * (a[i][1] + a[i][2]) + a[i][3];
    }
  }
}

template void transform_input<float>(const Plan&, const float*, std::int64_t, std::int64_t, float*,
                                     float*);
template void transform_weight<float>(const float*, std::int64_t, float*);
template void transform_output<float>(const Plan&, const float*, std::int64_t, std::int64_t,
                                      const float*, float*, float*);
template void adjoint_output<float>(const Plan&, const float*, std::int64_t, std::int64_t, float*,
                                    float*);
template void inverse_weight<float>(const float*, std::int64_t, float*);
template void transform_input<double>(const Plan&, const double*, std::int64_t, std::int64_t,
                                      double*, double*);
template void transform_weight<double>(const double*, std::int64_t, double*);
template void transform_output<double>(const Plan&, const double*, std::int64_t, std::int64_t,
                                       const double*, double*, double*);
template void adjoint_output<double>(const Plan&, const double*, std::int64_t, std::int64_t,
                                     double*, double*);
template void inverse_weight<double>(const double*, std::int64_t, double*);

}  // namespace ckpt::conv_detail::winograd
