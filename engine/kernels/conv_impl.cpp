#include "engine/kernels/conv_impl.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/kernels/winograd.hpp"

namespace ckpt::conv_detail {

namespace {

// Below this many output pixels per image, a per-image GEMM is too thin to run at full speed
// and one GEMM over the whole batch's columns wins despite its extra copies.
constexpr std::int64_t kPerImageMinPixels = 256;

bool per_image(const Geometry& g) {
  return g.hw_out() >= kPerImageMinPixels;
}

bool use_winograd(const Geometry& g, ConvPath path) {
  switch (g.algorithm) {
    case ConvAlgorithm::im2col:
      return false;
    case ConvAlgorithm::winograd:
      return winograd_applies(g);
    case ConvAlgorithm::automatic:
      break;
  }
  return winograd_pays(g, path);
}

// Nested parallel regions only add overhead: inner loops run serially inside an outer one.
bool may_parallelize(std::int64_t work) {
  return work > kParallelGrain && !omp_in_parallel();
}

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

// out[o, p] = W_g[o, :] @ col_g[:, p] for every group, col [K, ld] (column offset applied by
// the caller), out [O, ld_out].
template <typename T>
void grouped_forward_gemm(const Geometry& g, const T* w, const T* col, std::int64_t ncols,
                          std::int64_t ld_col, T* out, std::int64_t ld_out) {
  const std::int64_t kg = g.k_group();
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    gemm_rm<T>(false, false, g.og(), ncols, kg, T(1), w + grp * g.og() * kg, kg,
               col + grp * kg * ld_col, ld_col, T(0), out + grp * g.og() * ld_out, ld_out);
}

// dcol_g = W_g^T @ dY_g (beta 0), dY [O, ld_g], dcol [K, ld_d].
template <typename T>
void grouped_input_gemm(const Geometry& g, const T* w, const T* gy, std::int64_t ncols,
                        std::int64_t ld_g, T* dcol, std::int64_t ld_d) {
  const std::int64_t kg = g.k_group();
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    gemm_rm<T>(true, false, kg, ncols, g.og(), T(1), w + grp * g.og() * kg, kg,
               gy + grp * g.og() * ld_g, ld_g, T(0), dcol + grp * kg * ld_d, ld_d);
}

// dW_g (+)= dY_g @ col_g^T, dY [O, ld_g], col [K, ld_c], dW [O, kg]; overwrites unless
// accumulate (no zero-fill pass over a weight-sized buffer).
template <typename T>
void grouped_weight_gemm(const Geometry& g, const T* gy, std::int64_t ld_g, const T* col,
                         std::int64_t ld_c, std::int64_t ncols, T* dw, bool accumulate) {
  const std::int64_t kg = g.k_group();
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    gemm_rm<T>(false, true, g.og(), kg, ncols, T(1), gy + grp * g.og() * ld_g, ld_g,
               col + grp * kg * ld_c, ld_c, accumulate ? T(1) : T(0), dw + grp * g.og() * kg, kg);
}

// Threads for the per-image loop: at most one per image, and one when the whole convolution
// is too small to pay for a thread team.
int image_threads(const Geometry& g) {
  const double macs = static_cast<double>(g.cols()) * static_cast<double>(g.o * g.k_group());
  if (macs < 4.0 * (1 << 20) || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(omp_get_max_threads(), 1, g.n));
}

template <typename T>
Tensor forward_t(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g) {
  Tensor out = Tensor::empty({g.n, g.o, g.ho, g.wo}, x.dtype());
  if (use_winograd(g, ConvPath::forward)) {
    winograd_forward(x, w, bias, g, out);
    return out;
  }
  const std::int64_t hw = g.hw_out();
  const std::int64_t in_plane = g.c * g.h * g.w;
  // On the meta device (a dry run) every buffer below is allocated as on the cpu, in the same
  // order and for as long, and no arithmetic runs.
  const bool live = !out.is_meta();
  const T* xp = data_or_null<T>(x, live);
  const T* wp = data_or_null<T>(w, live);
  const T* bp = data_or_null<T>(bias, live);
  T* op = data_or_null<T>(out, live);
  if (per_image(g)) {
    const int threads = image_threads(g);
    Tensor ws = g.pointwise() ? Tensor() : Tensor::empty({threads, g.k_rows(), hw}, x.dtype());
    Tensor scratch = g.pointwise() ? Tensor() : im2col_scratch(g, x.dtype());
    if (!live) return out;
    T* wsp = ws.defined() ? ws.data<T>() : nullptr;
    T* sp = scratch.defined() ? scratch.data<T>() : nullptr;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t n = 0; n < g.n; ++n) {
      const T* col = xp + n * in_plane;
      if (!g.pointwise()) {
        T* buf = wsp + omp_get_thread_num() * g.k_rows() * hw;
        im2col<T>(xp, g, n, 1, buf, sp);
        col = buf;
      }
      T* on = op + n * g.o * hw;
      grouped_forward_gemm<T>(g, wp, col, hw, hw, on, hw);
      if (bp)
        for (std::int64_t o = 0; o < g.o; ++o)
          for (std::int64_t p = 0; p < hw; ++p) on[o * hw + p] += bp[o];
    }
    return out;
  }
  // Small planes: one GEMM over [K, N*HoWo] into [O, N*HoWo], then into NCHW order.
  const Tensor col = [&] {
    if (g.pointwise() && g.n == 1) return x;
    Tensor c = Tensor::empty({g.k_rows(), g.cols()}, x.dtype());
    Tensor scratch = im2col_scratch(g, x.dtype());
    if (live) im2col<T>(xp, g, 0, g.n, c.data<T>(), scratch.data<T>());
    return c;
  }();
  Tensor mat = Tensor::empty({g.o, g.cols()}, x.dtype());
  if (!live) return out;
  T* mp = mat.data<T>();
  grouped_forward_gemm<T>(g, wp, col.data<T>(), g.cols(), g.cols(), mp, g.cols());
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(g.o * g.cols()))
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.o; ++o) {
      const T* src = mp + o * g.cols() + n * hw;
      T* dst = op + (n * g.o + o) * hw;
      const T b = bp ? bp[o] : T(0);
      for (std::int64_t p = 0; p < hw; ++p) dst[p] = src[p] + b;
    }
  return out;
}

template <typename T>
void per_image_backward(const Tensor& gy, const Tensor& x, const Tensor& w, const Geometry& g,
                        Tensor& dx, Tensor& dw) {
  const std::int64_t hw = g.hw_out();
  const std::int64_t in_plane = g.c * g.h * g.w;
  const std::int64_t wsize = g.o * g.k_group();
  const bool live = !gy.is_meta();
  const T* gp = data_or_null<T>(gy, live);
  const T* xp = data_or_null<T>(x, live);
  const T* wp = data_or_null<T>(w, live);
  T* dxp = data_or_null<T>(dx, live);
  const int threads = image_threads(g);
  // Thread 0 accumulates the weight gradient in place, the others into their own buffers,
  // summed at the end; each starts by overwriting (no zero-fill).
  Tensor partial =
      dw.defined() && threads > 1 ? Tensor::empty({threads - 1, wsize}, w.dtype()) : Tensor();
  std::vector<char> wrote(static_cast<std::size_t>(threads), 0);
  Tensor ws = g.pointwise() ? Tensor() : Tensor::empty({threads, g.k_rows(), hw}, gy.dtype());
  Tensor scratch = g.pointwise() ? Tensor() : im2col_scratch(g, gy.dtype());
  if (!live) return;
  T* wsp = ws.defined() ? ws.data<T>() : nullptr;
  T* sp = scratch.defined() ? scratch.data<T>() : nullptr;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (std::int64_t n = 0; n < g.n; ++n) {
    const int tid = omp_get_thread_num();
    T* buf = wsp ? wsp + tid * g.k_rows() * hw : nullptr;
    const T* gyn = gp + n * g.o * hw;
    if (dw.defined()) {
      const T* col = xp + n * in_plane;
      if (buf) {
        im2col<T>(xp, g, n, 1, buf, sp);
        col = buf;
      }
      T* acc = tid == 0 ? dw.data<T>() : partial.data<T>() + (tid - 1) * wsize;
      grouped_weight_gemm<T>(g, gyn, hw, col, hw, hw, acc, wrote[static_cast<std::size_t>(tid)]);
      wrote[static_cast<std::size_t>(tid)] = 1;
    }
    if (dxp) {
      T* dxn = dxp + n * in_plane;
      if (!buf) {
        grouped_input_gemm<T>(g, wp, gyn, hw, hw, dxn, hw);
      } else {
        grouped_input_gemm<T>(g, wp, gyn, hw, hw, buf, hw);
        col2im<T>(buf, g, n, 1, dxp, sp);
      }
    }
  }
  if (dw.defined()) {
    T* d = dw.data<T>();
    if (!wrote[0]) std::fill(d, d + wsize, T(0));
    for (int t = 1; t < threads; ++t) {
      if (!wrote[static_cast<std::size_t>(t)]) continue;
      const T* p = partial.data<T>() + (t - 1) * wsize;
#pragma omp parallel for schedule(static) if (may_parallelize(wsize))
      for (std::int64_t i = 0; i < wsize; ++i) d[i] += p[i];
    }
  }
}

template <typename T>
void batched_backward(const Tensor& gy, const Tensor& x, const Tensor& w, const Geometry& g,
                      Tensor& dx, Tensor& dw) {
  const std::int64_t hw = g.hw_out();
  // dY as [O, N*HoWo], the layout of the batched forward GEMM.
  Tensor gmat = Tensor::empty({g.o, g.cols()}, gy.dtype());
  // A dry run (meta) makes the same buffers in the same order and skips the arithmetic.
  const bool live = !gmat.is_meta();
  T* gm = data_or_null<T>(gmat, live);
  if (live) {
    const T* s = gy.data<T>();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(g.o * g.cols()))
    for (std::int64_t n = 0; n < g.n; ++n)
      for (std::int64_t o = 0; o < g.o; ++o)
        std::memcpy(gm + o * g.cols() + n * hw, s + (n * g.o + o) * hw,
                    static_cast<std::size_t>(hw) * sizeof(T));
  }
  const bool x_is_col = g.pointwise() && g.n == 1;
  if (dx.defined()) {
    if (x_is_col) {
      if (live)
        grouped_input_gemm<T>(g, w.data<T>(), gm, g.cols(), g.cols(), dx.data<T>(), g.cols());
    } else if (g.k_rows() >= g.cols()) {
      // Few pixels, a large weight: dcol^T = dY^T W (per group, into its block of columns).
      Tensor dcol_t = Tensor::empty({g.cols(), g.k_rows()}, gy.dtype());
      const std::int64_t kg = g.k_group();
      for (std::int64_t grp = 0; live && grp < g.groups; ++grp)
        gemm_rm<T>(true, false, g.cols(), kg, g.og(), T(1), gm + grp * g.og() * g.cols(), g.cols(),
                   w.data<T>() + grp * g.og() * kg, kg, T(0), dcol_t.data<T>() + grp * kg,
                   g.k_rows());
      Tensor scratch = im2col_scratch(g, gy.dtype());
      if (live) col2im_t<T>(dcol_t.data<T>(), g, g.n, dx.data<T>(), scratch.data<T>());
    } else {
      Tensor dcol = Tensor::empty({g.k_rows(), g.cols()}, gy.dtype());
      if (live)
        grouped_input_gemm<T>(g, w.data<T>(), gm, g.cols(), g.cols(), dcol.data<T>(), g.cols());
      Tensor scratch = im2col_scratch(g, gy.dtype());
      if (live) col2im<T>(dcol.data<T>(), g, 0, g.n, dx.data<T>(), scratch.data<T>());
    }
  }
  if (dw.defined()) {
    Tensor col = x;
    if (!x_is_col) {
      col = Tensor::empty({g.k_rows(), g.cols()}, x.dtype());
      Tensor scratch = im2col_scratch(g, x.dtype());
      if (live) im2col<T>(x.data<T>(), g, 0, g.n, col.data<T>(), scratch.data<T>());
    }
    if (live)
      grouped_weight_gemm<T>(g, gm, g.cols(), col.data<T>(), g.cols(), g.cols(), dw.data<T>(),
                             false);
  }
}

template <typename T>
TensorList backward_t(const Tensor& gy, const Tensor& x, const Tensor& w, const Geometry& g,
                      const std::vector<bool>& need, bool has_bias) {
  TensorList r(has_bias ? 3 : 2);
  // Filled by the paths below (no zero-fill pass unless col2im accumulates).
  // x is read only for the weight gradient (transposed_forward passes none).
  Tensor dx = need[0] ? Tensor::empty({g.n, g.c, g.h, g.w}, w.dtype()) : Tensor();
  Tensor dw = need[1] ? Tensor::empty(w.shape(), w.dtype()) : Tensor();
  // Each gradient by its own fastest path; the im2col paths do whichever is left.
  Tensor dx_rest = dx, dw_rest = dw;
  if (dx.defined() && use_winograd(g, ConvPath::input_grad)) {
    winograd_input_grad(gy, w, g, dx);
    dx_rest = Tensor();
  }
  if (dw.defined() && use_winograd(g, ConvPath::weight_grad)) {
    winograd_weight_grad(gy, x, g, dw);
    dw_rest = Tensor();
  }
  if (dx_rest.defined() || dw_rest.defined()) {
    if (per_image(g))
      per_image_backward<T>(gy, x, w, g, dx_rest, dw_rest);
    else
      batched_backward<T>(gy, x, w, g, dx_rest, dw_rest);
  }
  r[0] = dx;
  r[1] = dw;
  if (has_bias && need[2]) {
    Tensor db = Tensor::empty({g.o}, gy.dtype());
    T* d = data_or_null<T>(db, !db.is_meta());
    const T* gp = data_or_null<T>(gy, d != nullptr);
    const std::int64_t hw = g.hw_out();
    if (d) {
#pragma omp parallel for schedule(static) if (may_parallelize(g.o * g.cols()))
      for (std::int64_t o = 0; o < g.o; ++o) {
        double acc = 0;
        for (std::int64_t n = 0; n < g.n; ++n) {
          const T* row = gp + (n * g.o + o) * hw;
          for (std::int64_t p = 0; p < hw; ++p) acc += row[p];
        }
        d[o] = static_cast<T>(acc);
      }
    }
    r[2] = db;
  }
  return r;
}

}  // namespace

Tensor forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g) {
  return dispatch_floating(x.dtype(), "conv2d",
                           [&]<typename T>() { return forward_t<T>(x, w, bias, g); });
}

TensorList backward(const Tensor& grad_out, const Tensor& x, const Tensor& w, const Geometry& g,
                    const std::vector<bool>& need, bool has_bias) {
  const Tensor gy = as_contiguous(grad_out);
  return dispatch_floating(w.dtype(), "conv2d backward", [&]<typename T>() {
    return backward_t<T>(gy, x, w, g, need, has_bias);
  });
}

namespace {

// Adds bias[c] to every pixel of channel c of y [N, C, H, W], or sums dy's pixels per channel.
template <typename T>
void add_channel_bias(Tensor& y, const Tensor& bias) {
  const std::int64_t n = y.shape()[0], c = y.shape()[1], hw = y.shape()[2] * y.shape()[3];
  T* yp = y.data<T>();
  const T* bp = bias.data<T>();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(n * c * hw))
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      T* row = yp + (i * c + ch) * hw;
      for (std::int64_t p = 0; p < hw; ++p) row[p] += bp[ch];
    }
}

template <typename T>
Tensor channel_sums(const Tensor& gy) {
  const std::int64_t n = gy.shape()[0], c = gy.shape()[1], hw = gy.shape()[2] * gy.shape()[3];
  Tensor db = Tensor::empty({c}, gy.dtype());
  if (db.is_meta()) return db;
  const T* gp = gy.data<T>();
  T* d = db.data<T>();
#pragma omp parallel for schedule(static) if (may_parallelize(n * c * hw))
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double acc = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T* row = gp + (i * c + ch) * hw;
      for (std::int64_t p = 0; p < hw; ++p) acc += row[p];
    }
    d[ch] = static_cast<T>(acc);
  }
  return db;
}

}  // namespace

Tensor transposed_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g) {
  return dispatch_floating(w.dtype(), "conv_transpose2d", [&]<typename T>() {
    // The input gradient of the adjoint convolution, with x as its output gradient.
    Tensor y = backward_t<T>(x, Tensor(), w, g, {true, false}, false)[0];
    if (bias.defined() && !y.is_meta()) add_channel_bias<T>(y, bias);
    return y;
  });
}

TensorList transposed_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                               const Geometry& g, const std::vector<bool>& need, bool has_bias) {
  const Tensor gy = as_contiguous(grad_out);
  return dispatch_floating(w.dtype(), "conv_transpose2d backward", [&]<typename T>() {
    TensorList r(has_bias ? 3 : 2);
    // dx: the adjoint convolution of dy; dw: its weight gradient with x as the output gradient.
    if (need[0]) r[0] = forward_t<T>(gy, w, Tensor(), g);
    if (need[1]) r[1] = backward_t<T>(x, gy, w, g, {false, true}, false)[1];
    if (has_bias && need[2]) r[2] = channel_sums<T>(gy);
    return r;
  });
}

}  // namespace ckpt::conv_detail
