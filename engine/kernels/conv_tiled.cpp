#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/conv_impl_detail.hpp"
#include "engine/kernels/gemm_packed.hpp"
#include "engine/kernels/kernels.hpp"

// The convolution over large images (volumes) by column tiles: the column matrix of a few
// hundred output pixels at a time, built from a zero-padded copy of the image and consumed by
// the GEMM while it is still in cache. A whole image's column matrix is K x pixels: for a 3-D
// layer (R3D-18's first stage: 1,728 x 50,176 floats) that is 347 MB written, then streamed
// through the GEMM from memory, where a tile is 1.7 MB or less and stays in L2. Tiles are also
// what the threads share out, so one image keeps every thread busy.

namespace ckpt::conv_detail {

namespace {

// Column tile: a few hundred pixels (the GEMMs run [O, K] x [K, 96..256] at their full rate),
// fewer for deep columns so that a tile stays within ~2 MB; whole panels of gemm_packed's B.
std::int64_t tile_pixels(const Geometry& g) {
  const std::int64_t fit = (std::int64_t{1} << 19) / std::max<std::int64_t>(g.k_rows(), 1);
  return std::clamp<std::int64_t>(fit / kPackedCols * kPackedCols, 64, 256);
}

// Whether the products run on gemm_packed (float32; other types on gemm_rm).
template <typename T>
constexpr bool packed_forward() {
  return std::is_same_v<T, float>;
}

bool padded(const Geometry& g) {
  return g.pt != 0 || g.ph != 0 || g.pw != 0;
}

int tile_threads(const Geometry& g, std::int64_t tiles) {
  const double macs = static_cast<double>(g.cols()) * static_cast<double>(g.o * g.k_group());
  if (macs < 4.0 * (1 << 20) || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(omp_get_max_threads(), 1, tiles));
}

// The image's source for im2col_pixels: x itself when unpadded, else its padded copy.
template <typename T>
const T* image_source(const T* x, const Geometry& g, std::int64_t n, T* pad_buffer) {
  if (!pad_buffer) return x + n * g.c * g.hw_in();
  pad_image<T>(x, g, n, pad_buffer);
  return pad_buffer;
}

}  // namespace

bool tiled_applies(const Geometry& g) {
  return per_image(g) && !g.pointwise();
}

template <typename T>
void tiled_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
                   Tensor& out) {
  const std::int64_t hw = g.hw_out(), k_rows = g.k_rows(), kg = g.k_group();
  const std::int64_t tile = tile_pixels(g), tiles = (hw + tile - 1) / tile;
  const int threads = tile_threads(g, tiles);
  constexpr bool packed = packed_forward<T>();
  const std::int64_t packed_w = packed_a_size(g.og(), kg);
  Tensor wpack = packed ? Tensor::empty({g.groups, packed_w}, w.dtype()) : Tensor();
  Tensor pad = padded(g) ? Tensor::empty({g.c, padded_volume(g)}, x.dtype()) : Tensor();
  Tensor ws = Tensor::empty({threads, k_rows, tile}, x.dtype());
  // On the meta device (a dry run) the buffers above are allocated as on the cpu, and no
  // arithmetic runs.
  if (out.is_meta()) return;
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  T* padp = pad.defined() ? pad.data<T>() : nullptr;
  T* wsp = ws.data<T>();
  T* op = out.data<T>();
  if constexpr (packed)
    for (std::int64_t grp = 0; grp < g.groups; ++grp)
      pack_a(wp + grp * g.og() * kg, g.og(), kg, kg, wpack.data<float>() + grp * packed_w);
  for (std::int64_t n = 0; n < g.n; ++n) {
    const T* src = image_source<T>(xp, g, n, padp);
    T* on = op + n * g.o * hw;
    parallel_for_threads(tiles, threads, [&](std::int64_t t) {
      const std::int64_t p0 = t * tile, count = std::min(tile, hw - p0);
      T* col = wsp + omp_get_thread_num() * k_rows * tile;
      if constexpr (packed) {
        im2col_pixels<T>(src, g, p0, count, col, ColumnLayout::column_panels);
        for (std::int64_t grp = 0; grp < g.groups; ++grp)
          gemm_packed(wpack.data<float>() + grp * packed_w, g.og(), kg,
                      col + grp * kg * kPackedCols, k_rows * kPackedCols, count,
                      on + grp * g.og() * hw + p0, hw);
      } else {
        im2col_pixels<T>(src, g, p0, count, col);
        for (std::int64_t grp = 0; grp < g.groups; ++grp)
          gemm_rm<T>(false, false, g.og(), count, kg, T(1), wp + grp * g.og() * kg, kg,
                     col + grp * kg * count, count, T(0), on + grp * g.og() * hw + p0, hw);
      }
      if (bp)
        for (std::int64_t o = 0; o < g.o; ++o)
          for (std::int64_t p = 0; p < count; ++p) on[o * hw + p0 + p] += bp[o];
    });
  }
}

// The weight gradient on gemm_packed, as dW^T [K, O] += col [K, P] dY^T [P, O] per tile: the
// column tile written as packed A (panels of kPackedRows taps), dY's tile transposed into
// packed B (panels of kPackedCols output channels), one running sum per thread in [K, O], the
// threads' sums added and transposed into dW at the end.
void packed_weight_grad(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw) {
  const std::int64_t hw = g.hw_out(), kg = g.k_group(), og = g.og();
  const std::int64_t kg_rows = (kg + kPackedRows - 1) / kPackedRows * kPackedRows;
  const std::int64_t og_cols = (og + kPackedCols - 1) / kPackedCols * kPackedCols;
  const std::int64_t wsize = g.o * kg;
  const std::int64_t tile = tile_pixels(g), tiles = (hw + tile - 1) / tile;
  const int threads = tile_threads(g, tiles);
  Tensor pad = padded(g) ? Tensor::empty({g.c, padded_volume(g)}, x.dtype()) : Tensor();
  Tensor cols = Tensor::empty({threads, g.groups * kg_rows * tile}, x.dtype());
  Tensor gy_t = Tensor::empty({threads, g.groups * og_cols * tile}, x.dtype());
  Tensor sums = Tensor::empty({threads, wsize}, x.dtype());
  if (dw.is_meta()) return;
  const float* xp = x.data<float>();
  const float* gp = gy.data<float>();
  float* padp = pad.defined() ? pad.data<float>() : nullptr;
  std::vector<char> wrote(static_cast<std::size_t>(threads), 0);
  for (std::int64_t n = 0; n < g.n; ++n) {
    const float* src = image_source<float>(xp, g, n, padp);
    const float* gyn = gp + n * g.o * hw;
    parallel_for_threads(tiles, threads, [&](std::int64_t t) {
      const int tid = omp_get_thread_num();
      const std::int64_t p0 = t * tile, count = std::min(tile, hw - p0);
      float* col = cols.data<float>() + tid * g.groups * kg_rows * tile;
      im2col_pixels<float>(src, g, p0, count, col, ColumnLayout::row_panels);
      float* bt = gy_t.data<float>() + tid * g.groups * og_cols * tile;
      for (std::int64_t grp = 0; grp < g.groups; ++grp)
        for (std::int64_t o = 0; o < og; ++o) {
          const float* row = gyn + (grp * og + o) * hw + p0;
          float* d =
              bt + grp * og_cols * count + o / kPackedCols * kPackedCols * count + o % kPackedCols;
          for (std::int64_t p = 0; p < count; ++p) d[p * kPackedCols] = row[p];
        }
      float* acc = sums.data<float>() + tid * wsize;
      for (std::int64_t grp = 0; grp < g.groups; ++grp)
        gemm_packed(col + grp * kg_rows * count, kg, count, bt + grp * og_cols * count,
                    kPackedCols * count, og, acc + grp * kg * og, og,
                    wrote[static_cast<std::size_t>(tid)] != 0);
      wrote[static_cast<std::size_t>(tid)] = 1;
    });
  }
  float* d = dw.data<float>();
  const float* sp = sums.data<float>();
#pragma omp parallel for schedule(static) if (may_parallelize(wsize))
  for (std::int64_t row = 0; row < g.o; ++row) {
    const std::int64_t grp = row / og, o = row % og;
    for (std::int64_t t = 0; t < kg; ++t) {
      float v = 0.0f;
      for (int th = 0; th < threads; ++th)
        if (wrote[static_cast<std::size_t>(th)]) v += sp[th * wsize + (grp * kg + t) * og + o];
      d[row * kg + t] = v;
    }
  }
}

template <typename T>
void tiled_weight_grad(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw) {
  if constexpr (packed_forward<T>()) {
    packed_weight_grad(gy, x, g, dw);
    return;
  }
  const std::int64_t hw = g.hw_out(), k_rows = g.k_rows(), kg = g.k_group();
  const std::int64_t wsize = g.o * kg;
  const std::int64_t tile = tile_pixels(g), tiles = (hw + tile - 1) / tile;
  const int threads = tile_threads(g, tiles);
  Tensor pad = padded(g) ? Tensor::empty({g.c, padded_volume(g)}, x.dtype()) : Tensor();
  Tensor ws = Tensor::empty({threads, k_rows, tile}, x.dtype());
  // Thread 0 accumulates in dw, the others in their own partial sums, added at the end; each
  // starts by overwriting (no zero-fill pass).
  Tensor partial = threads > 1 ? Tensor::empty({threads - 1, wsize}, dw.dtype()) : Tensor();
  if (dw.is_meta()) return;
  const T* xp = x.data<T>();
  const T* gp = gy.data<T>();
  T* padp = pad.defined() ? pad.data<T>() : nullptr;
  T* wsp = ws.data<T>();
  T* d = dw.data<T>();
  std::vector<char> wrote(static_cast<std::size_t>(threads), 0);
  for (std::int64_t n = 0; n < g.n; ++n) {
    const T* src = image_source<T>(xp, g, n, padp);
    const T* gyn = gp + n * g.o * hw;
    parallel_for_threads(tiles, threads, [&](std::int64_t t) {
      const int tid = omp_get_thread_num();
      const std::int64_t p0 = t * tile, count = std::min(tile, hw - p0);
      T* col = wsp + tid * k_rows * tile;
      im2col_pixels<T>(src, g, p0, count, col);
      T* acc = tid == 0 ? d : partial.data<T>() + (tid - 1) * wsize;
      const bool accumulate = wrote[static_cast<std::size_t>(tid)] != 0;
      for (std::int64_t grp = 0; grp < g.groups; ++grp)
        gemm_rm<T>(false, true, g.og(), kg, count, T(1), gyn + grp * g.og() * hw + p0, hw,
                   col + grp * kg * count, count, accumulate ? T(1) : T(0), acc + grp * g.og() * kg,
                   kg);
      wrote[static_cast<std::size_t>(tid)] = 1;
    });
  }
  add_thread_partials(d, partial, wrote, wsize);
}

// A stride-1 convolution's input gradient is itself a stride-1 convolution: of dY, padded by
// dilation * (k - 1) - padding, with the kernel flipped in every spatial dimension and its
// input and output channels exchanged within each group. So it runs through the tiled forward
// instead of a column matrix of the whole image and a scatter (col2im) back.
bool flipped_input_grad_applies(const Geometry& g) {
  return tiled_applies(g) && g.st == 1 && g.sh == 1 && g.sw == 1 && g.pt <= g.dt * (g.kt - 1) &&
         g.ph <= g.dh * (g.kh - 1) && g.pw <= g.dw * (g.kw - 1);
}

template <typename T>
void flipped_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx) {
  Geometry f = g;
  f.c = g.o;
  f.o = g.c;
  f.t = g.to;
  f.h = g.ho;
  f.w = g.wo;
  f.to = g.t;
  f.ho = g.h;
  f.wo = g.w;
  f.pt = g.dt * (g.kt - 1) - g.pt;
  f.ph = g.dh * (g.kh - 1) - g.ph;
  f.pw = g.dw * (g.kw - 1) - g.pw;
  // w [O, C/g, kt, kh, kw] -> wf [C, O/g, kt, kh, kw], flipped.
  Tensor wf = Tensor::empty({g.c, g.og(), g.kt, g.kh, g.kw}, w.dtype());
  if (!wf.is_meta()) {
    const T* wp = w.data<T>();
    T* fp = wf.data<T>();
    const std::int64_t kk = g.kk(), cg = g.cg(), og = g.og();
    for (std::int64_t grp = 0; grp < g.groups; ++grp)
      for (std::int64_t o = 0; o < og; ++o)
        for (std::int64_t c = 0; c < cg; ++c) {
          const T* src = wp + ((grp * og + o) * cg + c) * kk;
          T* dst = fp + ((grp * cg + c) * og + o) * kk;
          for (std::int64_t k = 0; k < kk; ++k) dst[k] = src[kk - 1 - k];
        }
  }
  tiled_forward<T>(gy, wf, Tensor(), f, dx);
}

// dcol = W^T dY for one span of pixels at a time, then col2im into a zero-padded accumulator of
// the image. Spans run in order (neighbours add into the same input pixels); within a span the
// threads share the GEMM's columns, then, after a barrier, the channels of col2im.
template <typename T>
void tiled_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx) {
  constexpr bool packed = packed_forward<T>();
  const std::int64_t hw = g.hw_out(), k_rows = g.k_rows(), kg = g.k_group(), og = g.og();
  const std::int64_t kg_rows = (kg + kPackedRows - 1) / kPackedRows * kPackedRows;
  // Spans of up to ~8 MB of columns, not single tiles: each span costs the threads two
  // synchronisations, which on a loaded machine wait for a descheduled thread (R3D-18's 1x1x1
  // stride-2 downsample at batch 8: 2.8 s for 400 tiles under load, ~50 ms of arithmetic).
  const std::int64_t fit = (std::int64_t{8} << 20) / static_cast<std::int64_t>(sizeof(float)) /
                           std::max<std::int64_t>(k_rows, 1);
  const std::int64_t whole = (hw + kPackedCols - 1) / kPackedCols * kPackedCols;
  const std::int64_t tile = std::clamp(fit / kPackedCols * kPackedCols, tile_pixels(g), whole);
  const std::int64_t tiles = (hw + tile - 1) / tile;
  const int threads = tile_threads(g, tiles * tile / tile_pixels(g));
  Tensor wt = packed ? Tensor::empty({g.groups, kg_rows * og}, w.dtype()) : Tensor();
  Tensor gy_panels = packed ? Tensor::empty({g.o, tile}, w.dtype()) : Tensor();
  Tensor dcol = Tensor::empty({k_rows, tile}, w.dtype());
  Tensor acc = padded(g) ? Tensor::empty({g.c, padded_volume(g)}, w.dtype()) : Tensor();
  if (dx.is_meta()) return;
  const T* wp = w.data<T>();
  const T* gp = gy.data<T>();
  T* dcp = dcol.data<T>();
  if constexpr (packed) {
    // W^T per group as packed A: panels of kPackedRows taps, depth og.
    float* wtp = wt.data<float>();
    std::fill(wtp, wtp + g.groups * kg_rows * og, 0.0f);
    for (std::int64_t grp = 0; grp < g.groups; ++grp)
      for (std::int64_t o = 0; o < og; ++o)
        for (std::int64_t t = 0; t < kg; ++t)
          wtp[grp * kg_rows * og + t / kPackedRows * kPackedRows * og + o * kPackedRows +
              t % kPackedRows] = wp[(grp * og + o) * kg + t];
  }
  const std::int64_t vol = padded_volume(g);
  for (std::int64_t n = 0; n < g.n; ++n) {
    T* target = acc.defined() ? acc.data<T>() : dx.data<T>() + n * g.c * g.hw_in();
    std::fill(target, target + g.c * vol, T(0));
    const T* gyn = gp + n * g.o * hw;
    for (std::int64_t t = 0; t < tiles; ++t) {
      const std::int64_t p0 = t * tile, count = std::min(tile, hw - p0);
      const std::int64_t panels = (count + kPackedCols - 1) / kPackedCols;
      // Columns [panel p0 .. p1) of the tile's dcol.
      auto columns = [&](std::int64_t q0, std::int64_t q1) {
        if (q0 >= q1) return;
        const std::int64_t c0 = q0 * kPackedCols, c1 = std::min(count, q1 * kPackedCols);
        if constexpr (packed) {
          float* bp = gy_panels.data<float>();
          for (std::int64_t o = 0; o < g.o; ++o)
            for (std::int64_t q = q0; q < q1; ++q) {
              const std::int64_t from = q * kPackedCols, to = std::min(count, from + kPackedCols);
              float* d = bp + q * g.o * kPackedCols + o * kPackedCols;
              std::copy(gyn + o * hw + p0 + from, gyn + o * hw + p0 + to, d);
            }
          for (std::int64_t grp = 0; grp < g.groups; ++grp)
            gemm_packed(wt.data<float>() + grp * kg_rows * og, kg, og,
                        bp + q0 * g.o * kPackedCols + grp * og * kPackedCols, g.o * kPackedCols,
                        c1 - c0, dcp + grp * kg * count + c0, count);
        } else {
          for (std::int64_t grp = 0; grp < g.groups; ++grp)
            gemm_rm<T>(true, false, kg, c1 - c0, og, T(1), wp + grp * og * kg, kg,
                       gyn + grp * og * hw + p0 + c0, hw, T(0), dcp + grp * kg * count + c0, count);
        }
      };
      if (threads > 1) {
#pragma omp parallel num_threads(threads)
        {
          const std::int64_t th = omp_get_thread_num(), nth = omp_get_num_threads();
          columns(panels * th / nth, panels * (th + 1) / nth);
#pragma omp barrier
          col2im_pixels<T>(dcp, g, p0, count, target, g.c * th / nth, g.c * (th + 1) / nth);
        }
      } else {
        columns(0, panels);
        col2im_pixels<T>(dcp, g, p0, count, target, 0, g.c);
      }
    }
    if (acc.defined()) unpad_image<T>(target, g, n, dx.data<T>());
  }
}

#define CKPT_TILED_INSTANTIATE(T)                                                              \
  template void tiled_forward<T>(const Tensor&, const Tensor&, const Tensor&, const Geometry&, \
                                 Tensor&);                                                     \
  template void tiled_weight_grad<T>(const Tensor&, const Tensor&, const Geometry&, Tensor&);  \
  template void flipped_input_grad<T>(const Tensor&, const Tensor&, const Geometry&, Tensor&); \
  template void tiled_input_grad<T>(const Tensor&, const Tensor&, const Geometry&, Tensor&);
CKPT_TILED_INSTANTIATE(float)
CKPT_TILED_INSTANTIATE(double)
CKPT_TILED_INSTANTIATE(bfloat16)
CKPT_TILED_INSTANTIATE(float16)
#undef CKPT_TILED_INSTANTIATE

}  // namespace ckpt::conv_detail
