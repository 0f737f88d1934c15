#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/conv_impl_detail.hpp"

// Between image planes and the column matrices conv2d's GEMMs read and write.

namespace ckpt::conv_detail {

namespace {

// First output index whose input coordinate o*s - p + off is >= 0, and one past the last
// whose coordinate is < size.
inline void valid_range(std::int64_t out, std::int64_t s, std::int64_t p, std::int64_t off,
                        std::int64_t size, std::int64_t& lo, std::int64_t& hi) {
  const std::int64_t start = off - p;  // coordinate of output 0
  lo = start >= 0 ? 0 : (-start + s - 1) / s;
  hi = start >= size ? 0 : (size - start + s - 1) / s;
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
}

}  // namespace

// Scratch for im2col and col2im: one zero-padded input plane per thread. A Tensor, so the ledger
// counts it with the rest of the step's temporary memory.
Tensor im2col_scratch(const Geometry& g, DType dtype) {
  return Tensor::empty({omp_get_max_threads(), (g.h + 2 * g.ph) * (g.w + 2 * g.pw)}, dtype);
}

// col[(c*kh + i)*kw + j, m*HoWo + oh*Wo + ow] = x[n0 + m, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]
// for the `count` images from n0 (zero where the window reads padding). Each plane is first
// copied into a zero-padded scratch plane, so that every row of the result is one branch-free
// strided copy (rows are short; per-element bounds logic would dominate).
template <typename T>
void im2col(const T* x, const Geometry& g, std::int64_t n0, std::int64_t count, T* col,
            T* scratch) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  const std::int64_t ncols = count * g.hw_out();
  const bool padded = g.ph != 0 || g.pw != 0;
  // Inside an outer parallel region (per-image path) this loop runs serially and the scratch
  // slot is the outer thread's; otherwise each thread of this loop's team has its own.
  const bool nested = omp_in_parallel();
  const int outer_slot = omp_get_thread_num();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(g.k_rows() * ncols))
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t c = 0; c < g.c; ++c) {
      const T* plane = x + ((n0 + m) * g.c + c) * g.h * g.w;
      if (padded) {
        T* pad = scratch + (nested ? outer_slot : omp_get_thread_num()) * hp * wp;
        std::fill(pad, pad + g.ph * wp, T(0));
        for (std::int64_t y = 0; y < g.h; ++y) {
          T* row = pad + (y + g.ph) * wp;
          std::fill(row, row + g.pw, T(0));
          std::memcpy(row + g.pw, plane + y * g.w, static_cast<std::size_t>(g.w) * sizeof(T));
          std::fill(row + g.pw + g.w, row + wp, T(0));
        }
        std::fill(pad + (g.ph + g.h) * wp, pad + hp * wp, T(0));
        plane = pad;
      }
      for (std::int64_t i = 0; i < g.kh; ++i) {
        for (std::int64_t j = 0; j < g.kw; ++j) {
          T* __restrict dst = col + ((c * g.kh + i) * g.kw + j) * ncols + m * g.hw_out();
          for (std::int64_t oh = 0; oh < g.ho; ++oh) {
            const T* __restrict src = plane + (oh * g.sh + i * g.dh) * wp + j * g.dw;
            T* __restrict d = dst + oh * g.wo;
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

// The adjoint of im2col: dx[n0 + m, c, ...] = sum of dcol's taps (dx is overwritten). Taps
// accumulate into a zero-padded scratch plane (branch-free, vectorisable rows), whose
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
      T* __restrict pad = scratch + (nested ? outer_slot : omp_get_thread_num()) * hp * wp;
      std::fill(pad, pad + hp * wp, T(0));
      for (std::int64_t i = 0; i < g.kh; ++i) {
        for (std::int64_t j = 0; j < g.kw; ++j) {
          const T* __restrict src = dcol + ((c * g.kh + i) * g.kw + j) * ncols + m * g.hw_out();
          for (std::int64_t oh = 0; oh < g.ho; ++oh) {
            T* __restrict d = pad + (oh * g.sh + i * g.dh) * wp + j * g.dw;
            const T* __restrict s = src + oh * g.wo;
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
      T* plane = dx + ((n0 + m) * g.c + c) * g.h * g.w;
      for (std::int64_t y = 0; y < g.h; ++y)
        std::memcpy(plane + y * g.w, pad + (y + g.ph) * wp + g.pw,
                    static_cast<std::size_t>(g.w) * sizeof(T));
    }
  }
}

// col2im from the transposed column matrix: dcolT [count * HoWo, K], one row per output pixel
// (row m * HoWo + oh * Wo + ow), as the GEMM dY^T W writes it; that product runs faster than
// W^T dY when the batch's pixels are few and the weight is large (ResNet's late layers). Taps
// are added in col2im's order, so the two agree bit for bit on the same columns.
template <typename T>
void col2im_t(const T* dcolT, const Geometry& g, std::int64_t count, T* dx, T* scratch) {
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  const std::int64_t K = g.k_rows(), hw = g.hw_out();
  const bool nested = omp_in_parallel();
  const int outer_slot = omp_get_thread_num();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(K * count * hw))
  for (std::int64_t m = 0; m < count; ++m) {
    for (std::int64_t c = 0; c < g.c; ++c) {
      T* __restrict pad = scratch + (nested ? outer_slot : omp_get_thread_num()) * hp * wp;
      std::fill(pad, pad + hp * wp, T(0));
      for (std::int64_t i = 0; i < g.kh; ++i) {
        for (std::int64_t j = 0; j < g.kw; ++j) {
          const T* __restrict src = dcolT + m * hw * K + (c * g.kh + i) * g.kw + j;
          for (std::int64_t oh = 0; oh < g.ho; ++oh) {
            T* __restrict d = pad + (oh * g.sh + i * g.dh) * wp + j * g.dw;
            const T* __restrict s = src + oh * g.wo * K;
            for (std::int64_t ow = 0; ow < g.wo; ++ow) d[ow * g.sw] += s[ow * K];
          }
        }
      }
      T* plane = dx + (m * g.c + c) * g.h * g.w;
      for (std::int64_t y = 0; y < g.h; ++y)
        std::memcpy(plane + y * g.w, pad + (y + g.ph) * wp + g.pw,
                    static_cast<std::size_t>(g.w) * sizeof(T));
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

}  // namespace ckpt::conv_detail
