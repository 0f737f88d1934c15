#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/conv_impl.hpp"
#include "engine/kernels/conv_impl_detail.hpp"
#include "engine/kernels/kernels.hpp"

// The convolution's input and weight gradients: Winograd where it pays, else im2col + GEMM per
// image or over the whole batch, and the bias gradient.

namespace ckpt::conv_detail {

namespace {

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

template <typename T>
void per_image_backward(const Tensor& gy, const Tensor& x, const Tensor& w, const Geometry& g,
                        Tensor& dx, Tensor& dw) {
  const std::int64_t hw = g.hw_out();
  const std::int64_t in_plane = g.c * g.hw_in();
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
  parallel_for_threads(g.n, threads, [&](std::int64_t n) {
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
  });
  if (dw.defined()) {
    T* d = dw.data<T>();
    add_thread_partials(d, partial, wrote, wsize);
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

}  // namespace

template <typename T>
TensorList backward_t(const Tensor& gy, const Tensor& x, const Tensor& w, const Geometry& g,
                      const std::vector<bool>& need, bool has_bias) {
  TensorList r(has_bias ? 3 : 2);
  // Filled by the paths below (no zero-fill pass unless col2im accumulates).
  // x is read only for the weight gradient (transposed_forward passes none).
  Tensor dx = need[0] ? Tensor::empty(g.image_shape(g.n, g.c, true), w.dtype()) : Tensor();
  Tensor dw = need[1] ? Tensor::empty(w.shape(), w.dtype()) : Tensor();
  // Each gradient by its own fastest path; the im2col paths do whichever is left.
  Tensor dx_rest = dx, dw_rest = dw;
  if (dx.defined() && !is_reduced_v<T> && use_winograd(g, ConvPath::input_grad)) {
    winograd_input_grad(gy, w, g, dx);
    dx_rest = Tensor();
  }
  if (dw.defined() && !is_reduced_v<T> && use_winograd(g, ConvPath::weight_grad)) {
    winograd_weight_grad(gy, x, g, dw);
    dw_rest = Tensor();
  }
  if (dx_rest.defined() && flipped_input_grad_applies(g)) {
    flipped_input_grad<T>(gy, w, g, dx_rest);
    dx_rest = Tensor();
  } else if (dx_rest.defined() && tiled_applies(g)) {
    tiled_input_grad<T>(gy, w, g, dx_rest);
    dx_rest = Tensor();
  }
  if (dw_rest.defined() && tiled_applies(g)) {
    tiled_weight_grad<T>(gy, x, g, dw_rest);
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

template TensorList backward_t<float>(const Tensor&, const Tensor&, const Tensor&, const Geometry&,
                                      const std::vector<bool>&, bool);
template TensorList backward_t<double>(const Tensor&, const Tensor&, const Tensor&, const Geometry&,
                                       const std::vector<bool>&, bool);
template TensorList backward_t<bfloat16>(const Tensor&, const Tensor&, const Tensor&,
                                         const Geometry&, const std::vector<bool>&, bool);
template TensorList backward_t<float16>(const Tensor&, const Tensor&, const Tensor&,
                                        const Geometry&, const std::vector<bool>&, bool);

TensorList backward(const Tensor& grad_out, const Tensor& x, const Tensor& w, const Geometry& g,
                    const std::vector<bool>& need, bool has_bias) {
  if (runs_as_cudnn(w)) return cudnn_backward(grad_out, x, w, g, need, has_bias);
  const Tensor gy = as_contiguous(grad_out);
  return dispatch_floating_all(w.dtype(), "conv backward", [&]<typename T>() {
    return backward_t<T>(gy, x, w, g, need, has_bias);
  });
}

}  // namespace ckpt::conv_detail
