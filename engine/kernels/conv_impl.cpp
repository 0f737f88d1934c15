#include "engine/kernels/conv_impl.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/conv_impl_detail.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/kernels/winograd.hpp"
#include "engine/tensor/memory_semantics.hpp"

// Which path a convolution takes, and the forward; the gradients are in conv_backward.cpp,
// the column transforms in conv_columns.cpp, the transposed convolution in conv_transposed.cpp.

namespace ckpt::conv_detail {

namespace {

// Below this many output pixels per image, a per-image GEMM is too thin to run at full speed
// and one GEMM over the whole batch's columns wins despite its extra copies.
constexpr std::int64_t kPerImageMinPixels = 256;

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

}  // namespace

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

bool may_parallelize(std::int64_t work) {
  return work > kParallelGrain && !omp_in_parallel();
}

int image_threads(const Geometry& g) {
  const double macs = static_cast<double>(g.cols()) * static_cast<double>(g.o * g.k_group());
  if (macs < 4.0 * (1 << 20) || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(omp_get_max_threads(), 1, g.n));
}

template <typename T>
Tensor forward_t(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g) {
  Tensor out = Tensor::empty(g.image_shape(g.n, g.o, false), x.dtype());
  if (!is_reduced_v<T> && use_winograd(g, ConvPath::forward)) {
    winograd_forward(x, w, bias, g, out);
    return out;
  }
  const std::int64_t hw = g.hw_out();
  const std::int64_t in_plane = g.c * g.hw_in();
  // On the meta device (a dry run) every buffer below is allocated as on the cpu, in the same
  // order and for as long, and no arithmetic runs.
  const bool live = !out.is_meta();
  const T* xp = data_or_null<T>(x, live);
  const T* wp = data_or_null<T>(w, live);
  const T* bp = data_or_null<T>(bias, live);
  T* op = data_or_null<T>(out, live);
  if (tiled_applies(g)) {
    tiled_forward<T>(x, w, bias, g, out);
    return out;
  }
  if (per_image(g)) {
    const int threads = image_threads(g);
    Tensor ws = g.pointwise() ? Tensor() : Tensor::empty({threads, g.k_rows(), hw}, x.dtype());
    Tensor scratch = g.pointwise() ? Tensor() : im2col_scratch(g, x.dtype());
    if (!live) return out;
    T* wsp = ws.defined() ? ws.data<T>() : nullptr;
    T* sp = scratch.defined() ? scratch.data<T>() : nullptr;
    parallel_for_threads(g.n, threads, [&](std::int64_t n) {
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
    });
    return out;
  }
  // Small planes: one GEMM over [K, N*P] into [O, N*P] (P output pixels), then into NC... order.
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

template Tensor forward_t<float>(const Tensor&, const Tensor&, const Tensor&, const Geometry&);
template Tensor forward_t<double>(const Tensor&, const Tensor&, const Tensor&, const Geometry&);
template Tensor forward_t<bfloat16>(const Tensor&, const Tensor&, const Tensor&, const Geometry&);
template Tensor forward_t<float16>(const Tensor&, const Tensor&, const Tensor&, const Geometry&);

bool runs_as_cudnn(const Tensor& t) {
  return memory_semantics(t.device()).kernels == KernelAllocations::pytorch_cuda;
}

Tensor forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g) {
  if (runs_as_cudnn(x)) return cudnn_forward(x, w, bias, g);
  return dispatch_floating_all(x.dtype(), "conv",
                               [&]<typename T>() { return forward_t<T>(x, w, bias, g); });
}

}  // namespace ckpt::conv_detail
