#include "engine/kernels/winograd.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt::conv_detail {

namespace {

// Tiles per block for the forward and input-gradient GEMMs (columns of each of the 16 GEMMs):
// enough to run the GEMM at speed, few enough that a block's transformed input and output
// stay in the core's cache. The weight gradient reduces over tiles, so it takes longer blocks.
constexpr std::int64_t kTargetTiles = 128;
constexpr std::int64_t kWeightTargetTiles = 512;
// The 16 matrices of a transformed tensor lie one after another, each a cache line further
// than its size: with an exact power-of-two spacing, the 16 streams that a transform reads or
// writes at once would all fall into the same cache set and evict each other.
constexpr std::int64_t kSkew = 16;
inline std::int64_t slice(std::int64_t elems) {
  return elems + kSkew;
}

// Below this many multiply-adds (of the direct convolution) one thread does it all.
constexpr double kMinParallelMacs = 4.0 * (1 << 20);

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

Plan make_plan(std::int64_t n, std::int64_t cin, std::int64_t h, std::int64_t w, std::int64_t cout,
               std::int64_t ph, std::int64_t pw) {
  Plan p{n, cin, h, w, cout, ph, pw, h + 2 * ph - 2, w + 2 * pw - 2, 0, 0};
  p.ty = (p.ho + 1) / 2;
  p.tx = (p.wo + 1) / 2;
  return p;
}

Plan forward_plan(const Geometry& g) {
  return make_plan(g.n, g.c, g.h, g.w, g.o, g.ph, g.pw);
}

// dx = dY convolved with the flipped, transposed weight under padding 2 - p: its output is
// the input's size again.
Plan input_grad_plan(const Geometry& g) {
  return make_plan(g.n, g.o, g.ho, g.wo, g.c, 2 - g.ph, 2 - g.pw);
}

// Whole images per block, so that a block's tiles never straddle an image's edge; at least
// one block per thread when there are images enough.
struct Blocks {
  std::int64_t images = 1, count = 1;
  int threads = 1;
};

Blocks split(const Plan& p, std::int64_t target_tiles) {
  Blocks b;
  const int max_threads =
      omp_in_parallel() || p.macs() < kMinParallelMacs ? 1 : omp_get_max_threads();
  b.images = std::clamp<std::int64_t>((target_tiles + p.tiles() - 1) / p.tiles(), 1, p.n);
  b.images = std::min(b.images, (p.n + max_threads - 1) / max_threads);
  b.count = (p.n + b.images - 1) / b.images;
  b.threads = static_cast<int>(std::min<std::int64_t>(max_threads, b.count));
  return b;
}

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

// Per-thread scratch of the tile transforms: a padded plane, its eight phase planes, and four
// planes of one value per tile.
std::int64_t scratch_size(const Plan& p) {
  return p.hp() * p.wp() + 8 * (p.ty + 1) * p.tx + 4 * p.tiles();
}

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

// xi = 4 i + j of the rotated kernel's transform is xi = 4 p(i) + p(j) of the kernel's, p
// swapping 0 and 3.
constexpr int kFlip[16] = {15, 13, 14, 12, 7, 5, 6, 4, 11, 9, 10, 8, 3, 1, 2, 0};

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

// out = conv(in) with the transformed weight U[xi][cout][cin] (flipped: U[kFlip[xi]][cin][cout]
// used transposed): per block of images, transform the input, 16 GEMMs, transform the output,
// all on one thread.
template <typename T>
void run_conv(const Plan& p, const T* in, const T* U, bool flipped, const T* bias, T* out,
              DType dtype) {
  const Blocks b = split(p, kTargetTiles);
  const std::int64_t ld_max = b.images * p.tiles();
  const std::int64_t per_thread =
      16 * (slice(p.cin * ld_max) + slice(p.cout * ld_max)) + scratch_size(p);
  Tensor ws = Tensor::empty({b.threads, per_thread}, dtype);
  if (!out) return;  // a dry run: the workspace is allocated, nothing is computed
  T* base = ws.data<T>();
#pragma omp parallel for num_threads(b.threads) schedule(static) if (b.threads > 1)
  for (std::int64_t blk = 0; blk < b.count; ++blk) {
    const std::int64_t n0 = blk * b.images, count = std::min(b.images, p.n - n0);
    const std::int64_t ld = count * p.tiles();
    T* V = base + omp_get_thread_num() * per_thread;
    T* M = V + 16 * slice(p.cin * ld_max);
    T* pad = M + 16 * slice(p.cout * ld_max);
    transform_input(p, in, n0, count, V, pad);
    for (int xi = 0; xi < 16; ++xi)
      gemm_rm<T>(flipped, false, p.cout, ld, p.cin, T(1),
                 U + (flipped ? kFlip[xi] : xi) * slice(p.cout * p.cin), flipped ? p.cout : p.cin,
                 V + xi * slice(p.cin * ld), ld, T(0), M + xi * slice(p.cout * ld), ld);
    transform_output(p, M, n0, count, bias, out, pad);
  }
}

template <typename T>
void forward_t(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
               Tensor& out) {
  Tensor U = Tensor::empty({16 * slice(g.o * g.c)}, w.dtype());
  const bool live = !out.is_meta();
  if (live) transform_weight(w.data<T>(), g.o * g.c, U.data<T>());
  run_conv(forward_plan(g), data_or_null<T>(x, live), data_or_null<T>(U, live), false,
           data_or_null<T>(bias, live), data_or_null<T>(out, live), x.dtype());
}

template <typename T>
void input_grad_t(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx) {
  Tensor U = Tensor::empty({16 * slice(g.o * g.c)}, w.dtype());
  const bool live = !dx.is_meta();
  if (live) transform_weight(w.data<T>(), g.o * g.c, U.data<T>());
  run_conv(input_grad_plan(g), data_or_null<T>(gy, live), data_or_null<T>(U, live), true,
           static_cast<const T*>(nullptr), data_or_null<T>(dx, live), gy.dtype());
}

template <typename T>
void weight_grad_t(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw) {
  const Plan p = forward_plan(g);
  const Blocks b = split(p, kWeightTargetTiles);
  const std::int64_t ld_max = b.images * p.tiles();
  const std::int64_t per_thread =
      16 * (slice(p.cin * ld_max) + slice(p.cout * ld_max)) + scratch_size(p);
  const std::int64_t usize = 16 * slice(p.cout * p.cin);
  Tensor ws = Tensor::empty({b.threads, per_thread}, x.dtype());
  // One Winograd-domain accumulator per thread, summed at the end; each starts by overwriting.
  Tensor dU = Tensor::empty({b.threads, usize}, x.dtype());
  if (dw.is_meta()) return;  // a dry run: the buffers are allocated, nothing is computed
  std::vector<char> wrote(static_cast<std::size_t>(b.threads), 0);
  T* base = ws.data<T>();
  T* acc_base = dU.data<T>();
#pragma omp parallel for num_threads(b.threads) schedule(static) if (b.threads > 1)
  for (std::int64_t blk = 0; blk < b.count; ++blk) {
    const int tid = omp_get_thread_num();
    const std::int64_t n0 = blk * b.images, count = std::min(b.images, p.n - n0);
    const std::int64_t ld = count * p.tiles();
    T* V = base + tid * per_thread;
    T* Mh = V + 16 * slice(p.cin * ld_max);
    T* pad = Mh + 16 * slice(p.cout * ld_max);
    transform_input(p, x.data<T>(), n0, count, V, pad);
    adjoint_output(p, gy.data<T>(), n0, count, Mh, pad);
    T* acc = acc_base + tid * usize;
    const T beta = wrote[static_cast<std::size_t>(tid)] ? T(1) : T(0);
    for (int xi = 0; xi < 16; ++xi)
      gemm_rm<T>(false, true, p.cout, p.cin, ld, T(1), Mh + xi * slice(p.cout * ld), ld,
                 V + xi * slice(p.cin * ld), ld, beta, acc + xi * slice(p.cout * p.cin), p.cin);
    wrote[static_cast<std::size_t>(tid)] = 1;
  }
  for (int t = 1; t < b.threads; ++t) {
    if (!wrote[static_cast<std::size_t>(t)]) continue;
    const T* src = acc_base + t * usize;
#pragma omp parallel for schedule(static) if (usize > kParallelGrain)
    for (std::int64_t i = 0; i < usize; ++i) acc_base[i] += src[i];
  }
  inverse_weight(acc_base, g.o * g.c, dw.data<T>());
}

}  // namespace

bool winograd_applies(const Geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         g.groups == 1 && g.ph <= 2 && g.pw <= 2 && g.n > 0 && g.ho > 0 && g.wo > 0;
}

bool winograd_pays(const Geometry& g, ConvPath path) {
  if (!winograd_applies(g)) return false;
  const Plan p = path == ConvPath::input_grad ? input_grad_plan(g) : forward_plan(g);
  // The transforms cost per tile and channel what the GEMMs save: thin channel counts or
  // planes of one tile (where most of a 4x4 window is padding) lose.
  return p.tiles() >= 4 && p.cin >= 16 && p.cout >= 16;
}

void winograd_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
                      Tensor& out) {
  dispatch_floating(x.dtype(), "conv2d (winograd)",
                    [&]<typename T>() { forward_t<T>(x, w, bias, g, out); });
}

void winograd_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx) {
  dispatch_floating(gy.dtype(), "conv2d backward (winograd, input)",
                    [&]<typename T>() { input_grad_t<T>(gy, w, g, dx); });
}

void winograd_weight_grad(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw) {
  dispatch_floating(gy.dtype(), "conv2d backward (winograd, weight)",
                    [&]<typename T>() { weight_grad_t<T>(gy, x, g, dw); });
}

}  // namespace ckpt::conv_detail
