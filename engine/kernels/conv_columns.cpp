#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/kernels/conv_impl_detail.hpp"
#include "engine/kernels/gemm_packed.hpp"

// Between image volumes (planes, rows) and the column matrices the convolutions' GEMMs read
// and write.

namespace ckpt::conv_detail {

namespace {

// Copies one channel's volume into the middle of its zero-padded scratch volume.
template <typename T>
void pad_volume(const T* plane, const Geometry& g, T* pad) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw, slab_size = hp * wp;
  std::fill(pad, pad + g.pt * slab_size, T(0));
  for (std::int64_t z = 0; z < g.t; ++z) {
    T* slab = pad + (z + g.pt) * slab_size;
    const T* src = plane + z * g.h * g.w;
    std::fill(slab, slab + g.ph * wp, T(0));
    for (std::int64_t y = 0; y < g.h; ++y) {
      T* row = slab + (y + g.ph) * wp;
      std::fill(row, row + g.pw, T(0));
      std::memcpy(row + g.pw, src + y * g.w, static_cast<std::size_t>(g.w) * sizeof(T));
      std::fill(row + g.pw + g.w, row + wp, T(0));
    }
    std::fill(slab + (g.ph + g.h) * wp, slab + slab_size, T(0));
  }
  std::fill(pad + (g.pt + g.t) * slab_size, pad + padded_volume(g), T(0));
}

// The interior of a padded scratch volume back into one channel's volume.
template <typename T>
void unpad_volume(const T* pad, const Geometry& g, T* plane) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  for (std::int64_t z = 0; z < g.t; ++z)
    for (std::int64_t y = 0; y < g.h; ++y)
      std::memcpy(plane + (z * g.h + y) * g.w, pad + ((z + g.pt) * hp + y + g.ph) * wp + g.pw,
                  static_cast<std::size_t>(g.w) * sizeof(T));
}

}  // namespace

std::int64_t padded_volume(const Geometry& g) {
  return (g.t + 2 * g.pt) * (g.h + 2 * g.ph) * (g.w + 2 * g.pw);
}

// Scratch for im2col and col2im: one zero-padded input volume per thread. A Tensor, so the
// ledger counts it with the rest of the step's temporary memory.
Tensor im2col_scratch(const Geometry& g, DType dtype) {
  return Tensor::empty({omp_get_max_threads(), padded_volume(g)}, dtype);
}

template <typename T>
void pad_image(const T* x, const Geometry& g, std::int64_t n, T* padded) {
  const std::int64_t vol = padded_volume(g);
#pragma omp parallel for schedule(static) if (may_parallelize(g.c * vol))
  for (std::int64_t c = 0; c < g.c; ++c)
    pad_volume(x + (n * g.c + c) * g.hw_in(), g, padded + c * vol);
}

// col[((c*kt + a)*kh + i)*kw + j, p - p0] = image[c, oz*st + a*dt, oh*sh + i*dh, ow*sw + j*dw]
// for the output pixels p = (oz*Ho + oh)*Wo + ow in [p0, p0 + count) of one image, read from
// its zero-padded volume, laid out as `layout` says (conv_impl_detail.hpp). The pixels' rows
// are found once; each tap is then a few strided copies.
template <typename T>
void im2col_pixels(const T* image, const Geometry& g, std::int64_t p0, std::int64_t count, T* col,
                   ColumnLayout layout) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw, slab = hp * wp;
  const std::int64_t vol = padded_volume(g);
  const std::int64_t panel = layout == ColumnLayout::column_panels ? kPackedCols : kPackedRows;
  const std::int64_t kg = g.k_group(), kg_rows = (kg + panel - 1) / panel * panel;
  // Where tap t's first pixel goes, and the distance between its pixels.
  auto tap_offset = [&](std::int64_t t) -> std::int64_t {
    switch (layout) {
      case ColumnLayout::rows:
        return t * count;
      case ColumnLayout::column_panels:
        return t * kPackedCols;
      case ColumnLayout::row_panels:
        break;
    }
    const std::int64_t row = t / kg * kg_rows + t % kg;
    return row / kPackedRows * kPackedRows * count + row % kPackedRows;
  };
  const std::int64_t step = layout == ColumnLayout::row_panels ? kPackedRows : 1;
  struct Run {
    std::int64_t src, dst, len;  // offset in a channel's volume, offset from a tap's first, pixels
  };
  std::vector<Run> runs;
  for (std::int64_t p = p0, end = p0 + count; p < end;) {
    const std::int64_t row = p / g.wo, ow = p - row * g.wo;
    const std::int64_t oz = row / g.ho, oh = row - oz * g.ho;
    const std::int64_t local = p - p0;
    std::int64_t len = std::min(g.wo - ow, end - p), dst = local * step;
    if (layout == ColumnLayout::column_panels) {
      len = std::min(len, kPackedCols - local % kPackedCols);
      dst = local / kPackedCols * g.k_rows() * kPackedCols + local % kPackedCols;
    }
    runs.push_back({oz * g.st * slab + oh * g.sh * wp + ow * g.sw, dst, len});
    p += len;
  }
  const std::int64_t sw = g.sw;
  for (std::int64_t c = 0; c < g.c; ++c)
    for (std::int64_t a = 0; a < g.kt; ++a)
      for (std::int64_t i = 0; i < g.kh; ++i)
        for (std::int64_t j = 0; j < g.kw; ++j) {
          const T* tap = image + c * vol + a * g.dt * slab + i * g.dh * wp + j * g.dw;
          T* __restrict dst = col + tap_offset(((c * g.kt + a) * g.kh + i) * g.kw + j);
          for (const Run& r : runs) {
            const T* __restrict s = tap + r.src;
            T* __restrict d = dst + r.dst;
            // Constant strides let the compiler vectorise (stride 2 through permutes).
            if (step != 1) {
              for (std::int64_t k = 0; k < r.len; ++k) d[k * kPackedRows] = s[k * sw];
            } else if (sw == 1) {
              for (std::int64_t k = 0; k < r.len; ++k) d[k] = s[k];
            } else if (sw == 2) {
              for (std::int64_t k = 0; k < r.len; ++k) d[k] = s[2 * k];
            } else {
              for (std::int64_t k = 0; k < r.len; ++k) d[k] = s[k * sw];
            }
          }
        }
}

// The adjoint of im2col_pixels (rows layout) for the channels [c0, c1): adds each tap's
// column of dcol [K, count] into image [C, padded volume] (the zero-padded layout, or the
// image's own when the convolution has no padding).
template <typename T>
void col2im_pixels(const T* dcol, const Geometry& g, std::int64_t p0, std::int64_t count, T* image,
                   std::int64_t c0, std::int64_t c1) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw, slab = hp * wp;
  const std::int64_t vol = padded_volume(g), sw = g.sw;
  struct Run {
    std::int64_t dst, src, len;  // offset in a channel's volume, offset in a tap's row, pixels
  };
  std::vector<Run> runs;
  for (std::int64_t p = p0, end = p0 + count; p < end;) {
    const std::int64_t row = p / g.wo, ow = p - row * g.wo;
    const std::int64_t oz = row / g.ho, oh = row - oz * g.ho;
    const std::int64_t len = std::min(g.wo - ow, end - p);
    runs.push_back({oz * g.st * slab + oh * g.sh * wp + ow * sw, p - p0, len});
    p += len;
  }
  for (std::int64_t c = c0; c < c1; ++c)
    for (std::int64_t a = 0; a < g.kt; ++a)
      for (std::int64_t i = 0; i < g.kh; ++i)
        for (std::int64_t j = 0; j < g.kw; ++j) {
          T* tap = image + c * vol + a * g.dt * slab + i * g.dh * wp + j * g.dw;
          const T* src = dcol + (((c * g.kt + a) * g.kh + i) * g.kw + j) * count;
          for (const Run& r : runs) {
            T* __restrict d = tap + r.dst;
            const T* __restrict s = src + r.src;
            if (sw == 1) {
              for (std::int64_t k = 0; k < r.len; ++k) d[k] += s[k];
            } else if (sw == 2) {
              for (std::int64_t k = 0; k < r.len; ++k) d[2 * k] += s[k];
            } else {
              for (std::int64_t k = 0; k < r.len; ++k) d[k * sw] += s[k];
            }
          }
        }
}

template <typename T>
void unpad_image(const T* padded, const Geometry& g, std::int64_t n, T* x) {
  const std::int64_t vol = padded_volume(g);
#pragma omp parallel for schedule(static) if (may_parallelize(g.c * vol))
  for (std::int64_t c = 0; c < g.c; ++c)
    unpad_volume(padded + c * vol, g, x + (n * g.c + c) * g.hw_in());
}

// col[((c*kt + a)*kh + i)*kw + j, m*P + (oz*Ho + oh)*Wo + ow] =
//   x[n0 + m, c, oz*st - pt + a*dt, oh*sh - ph + i*dh, ow*sw - pw + j*dw]
// for the `count` images from n0 (zero where the window reads padding; P output pixels per
// image). Each channel is first copied into a zero-padded scratch volume, so that every row of
// the result is one branch-free strided copy (rows are short; per-element bounds logic would
// dominate).
template <typename T>
void im2col(const T* x, const Geometry& g, std::int64_t n0, std::int64_t count, T* col,
            T* scratch) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  const std::int64_t ncols = count * g.hw_out();
  const bool padded = g.pt != 0 || g.ph != 0 || g.pw != 0;
  // Inside an outer parallel region (per-image path) this loop runs serially and the scratch
  // slot is the outer thread's; otherwise each thread of this loop's team has its own.
  const bool nested = omp_in_parallel();
  const int outer_slot = omp_get_thread_num();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(g.k_rows() * ncols))
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t c = 0; c < g.c; ++c) {
      const T* plane = x + ((n0 + m) * g.c + c) * g.hw_in();
      if (padded) {
        T* pad = scratch + (nested ? outer_slot : omp_get_thread_num()) * padded_volume(g);
        pad_volume(plane, g, pad);
        plane = pad;
      }
      for (std::int64_t a = 0; a < g.kt; ++a) {
        for (std::int64_t i = 0; i < g.kh; ++i) {
          for (std::int64_t j = 0; j < g.kw; ++j) {
            T* __restrict dst =
                col + (((c * g.kt + a) * g.kh + i) * g.kw + j) * ncols + m * g.hw_out();
            for (std::int64_t oz = 0; oz < g.to; ++oz) {
              for (std::int64_t oh = 0; oh < g.ho; ++oh) {
                const T* __restrict src =
                    plane + ((oz * g.st + a * g.dt) * hp + oh * g.sh + i * g.dh) * wp + j * g.dw;
                T* __restrict d = dst + (oz * g.ho + oh) * g.wo;
                // Constant strides let the compiler vectorise (stride 2 through permutes).
                if (g.sw == 1) {
                  for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow] = src[ow];
                } else if (g.sw == 2) {
                  for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow] = src[2 * ow];
                } else {
                  for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow] = src[ow * g.sw];
                }
              }
            }
          }
        }
      }
    }
  }
}

// The adjoint of im2col: dx[n0 + m, c, ...] = sum of dcol's taps (dx is overwritten). Taps
// accumulate into a zero-padded scratch volume (branch-free, vectorisable rows), whose
// interior is then copied out. Parallel over (image, channel): no two share an element.
template <typename T>
void col2im(const T* dcol, const Geometry& g, std::int64_t n0, std::int64_t count, T* dx,
            T* scratch) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  const std::int64_t ncols = count * g.hw_out();
  const bool nested = omp_in_parallel();
  const int outer_slot = omp_get_thread_num();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(g.k_rows() * ncols))
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t c = 0; c < g.c; ++c) {
      T* __restrict pad = scratch + (nested ? outer_slot : omp_get_thread_num()) * padded_volume(g);
      std::fill(pad, pad + padded_volume(g), T(0));
      for (std::int64_t a = 0; a < g.kt; ++a) {
        for (std::int64_t i = 0; i < g.kh; ++i) {
          for (std::int64_t j = 0; j < g.kw; ++j) {
            const T* __restrict src =
                dcol + (((c * g.kt + a) * g.kh + i) * g.kw + j) * ncols + m * g.hw_out();
            for (std::int64_t oz = 0; oz < g.to; ++oz) {
              for (std::int64_t oh = 0; oh < g.ho; ++oh) {
                T* __restrict d =
                    pad + ((oz * g.st + a * g.dt) * hp + oh * g.sh + i * g.dh) * wp + j * g.dw;
                const T* __restrict s = src + (oz * g.ho + oh) * g.wo;
                if (g.sw == 1) {
                  for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow] += s[ow];
                } else if (g.sw == 2) {
                  for (std::int64_t ow = 0; ow < g.wo; ++ow) d[2 * ow] += s[ow];
                } else {
                  for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow * g.sw] += s[ow];
                }
              }
            }
          }
        }
      }
      unpad_volume(pad, g, dx + ((n0 + m) * g.c + c) * g.hw_in());
    }
  }
}

// col2im from the transposed column matrix: dcolT [count * P, K], one row per output pixel
// (row m * P + (oz * Ho + oh) * Wo + ow), as the GEMM dY^T W writes it; that product runs
// faster than W^T dY when the batch's pixels are few and the weight is large (ResNet's late
// layers). Taps are added in col2im's order, so the two agree bit for bit on the same columns.
template <typename T>
void col2im_t(const T* dcolT, const Geometry& g, std::int64_t count, T* dx, T* scratch) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  const std::int64_t K = g.k_rows(), hw = g.hw_out();
  const bool nested = omp_in_parallel();
  const int outer_slot = omp_get_thread_num();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(K * count * hw))
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t c = 0; c < g.c; ++c) {
      T* __restrict pad = scratch + (nested ? outer_slot : omp_get_thread_num()) * padded_volume(g);
      std::fill(pad, pad + padded_volume(g), T(0));
      for (std::int64_t a = 0; a < g.kt; ++a) {
        for (std::int64_t i = 0; i < g.kh; ++i) {
          for (std::int64_t j = 0; j < g.kw; ++j) {
            const T* __restrict src = dcolT + m * hw * K + ((c * g.kt + a) * g.kh + i) * g.kw + j;
            for (std::int64_t oz = 0; oz < g.to; ++oz) {
              for (std::int64_t oh = 0; oh < g.ho; ++oh) {
                T* __restrict d =
                    pad + ((oz * g.st + a * g.dt) * hp + oh * g.sh + i * g.dh) * wp + j * g.dw;
                const T* __restrict s = src + (oz * g.ho + oh) * g.wo * K;
                for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow * g.sw] += s[ow * K];
              }
            }
          }
        }
      }
      unpad_volume(pad, g, dx + (m * g.c + c) * g.hw_in());
    }
  }
}

template void im2col<float>(const float*, const Geometry&, std::int64_t, std::int64_t, float*,
                            float*);
template void im2col<double>(const double*, const Geometry&, std::int64_t, std::int64_t, double*,
                             double*);
template void col2im<float>(const float*, const Geometry&, std::int64_t, std::int64_t, float*,
                            float*);
template void col2im<double>(const double*, const Geometry&, std::int64_t, std::int64_t, double*,
                             double*);
template void col2im_t<float>(const float*, const Geometry&, std::int64_t, float*, float*);
template void col2im_t<double>(const double*, const Geometry&, std::int64_t, double*, double*);

template void im2col<bfloat16>(const bfloat16*, const Geometry&, std::int64_t, std::int64_t,
                               bfloat16*, bfloat16*);
template void im2col<float16>(const float16*, const Geometry&, std::int64_t, std::int64_t, float16*,
                              float16*);
template void col2im<bfloat16>(const bfloat16*, const Geometry&, std::int64_t, std::int64_t,
                               bfloat16*, bfloat16*);
template void col2im<float16>(const float16*, const Geometry&, std::int64_t, std::int64_t, float16*,
                              float16*);
template void col2im_t<bfloat16>(const bfloat16*, const Geometry&, std::int64_t, bfloat16*,
                                 bfloat16*);
template void col2im_t<float16>(const float16*, const Geometry&, std::int64_t, float16*, float16*);

#define CKPT_PIXELS_INSTANTIATE(T)                                                          \
  template void pad_image<T>(const T*, const Geometry&, std::int64_t, T*);                  \
  template void im2col_pixels<T>(const T*, const Geometry&, std::int64_t, std::int64_t, T*, \
                                 ColumnLayout);
#define CKPT_COL2IM_PIXELS_INSTANTIATE(T)                                                   \
  template void col2im_pixels<T>(const T*, const Geometry&, std::int64_t, std::int64_t, T*, \
                                 std::int64_t, std::int64_t);                               \
  template void unpad_image<T>(const T*, const Geometry&, std::int64_t, T*);
CKPT_COL2IM_PIXELS_INSTANTIATE(float)
CKPT_COL2IM_PIXELS_INSTANTIATE(double)
CKPT_COL2IM_PIXELS_INSTANTIATE(bfloat16)
CKPT_COL2IM_PIXELS_INSTANTIATE(float16)
#undef CKPT_COL2IM_PIXELS_INSTANTIATE
CKPT_PIXELS_INSTANTIATE(float)
CKPT_PIXELS_INSTANTIATE(double)
CKPT_PIXELS_INSTANTIATE(bfloat16)
CKPT_PIXELS_INSTANTIATE(float16)
#undef CKPT_PIXELS_INSTANTIATE

}  // namespace ckpt::conv_detail
