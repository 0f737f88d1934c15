#include "engine/ops/pool.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/pool_detail.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/tensor/reduced_float.hpp"

// Max pooling over 1, 2 or 3 spatial dimensions; the average poolings are in pool_avg.cpp, the
// adaptive ones in pool_adaptive.cpp.

namespace ckpt {

using namespace pool_detail;

namespace {

// Per plane, the input is copied once into a padded scratch plane, each row split into its
// `stride` column phases (so that every tap of a block of outputs reads contiguous lanes),
// with -inf in the padding and past the last window. A block of lanes is then updated tap by
// tap, branch-free in vector registers: a padded tap is -inf, which never wins (PyTorch skips
// it), and taps run in PyTorch's order (row by row, then column), so its rule -- the first
// strictly greater value wins, and NaN propagates (the last NaN wins) -- picks the same index.
template <typename T>
struct MaxPoolPlan {
  static constexpr std::int64_t kLanes = 32 / sizeof(T);
  std::int64_t blocks, wq, row;  // blocks of lanes per output row; phase width; padded row
  explicit MaxPoolPlan(const PoolGeometry& g)
      : blocks((g.wo + kLanes - 1) / kLanes),
        wq(std::max((g.pw + g.w + g.sw - 1) / g.sw, blocks * kLanes + (g.kw - 1) * g.dw / g.sw)),
        row(g.sw * wq) {}
};

template <typename T>
void max_pool_pad_plane(const T* in, const PoolGeometry& g, const MaxPoolPlan<T>& p, T* padded) {
  std::fill(padded, padded + g.h * p.row, -std::numeric_limits<T>::infinity());
  for (std::int64_t ih = 0; ih < g.h; ++ih) {
    const T* src = in + ih * g.w;
    for (std::int64_t r = 0; r < g.sw; ++r) {
      // Phase r holds padded columns k * sw + r, i.e. input columns k * sw + r - pw.
      T* dst = padded + ih * p.row + r * p.wq;
      std::int64_t k = r >= g.pw ? 0 : (g.pw - r + g.sw - 1) / g.sw;
      for (std::int64_t iw = k * g.sw + r - g.pw; iw < g.w; iw += g.sw, ++k) dst[k] = src[iw];
    }
  }
}

template <typename T>
void max_pool_block(const T* padded, const PoolGeometry& g, const MaxPoolPlan<T>& p,
                    std::int64_t oh, std::int64_t ow0, T* out_row, std::int64_t* idx_row) {
  constexpr std::int64_t L = MaxPoolPlan<T>::kLanes;
  typedef T V __attribute__((vector_size(L * sizeof(T))));
  // The winning tap's offset from the window's corner (in input elements; exact in T, see
  // max_pool_forward) is carried in T lanes beside the values; -1 stands for PyTorch's initial
  // index.
  V m, tap;
  for (std::int64_t l = 0; l < L; ++l) {
    m[l] = -std::numeric_limits<T>::infinity();
    tap[l] = T(-1);
  }
  const std::int64_t top = oh * g.sh - g.ph;
  for (std::int64_t i = 0; i < g.kh; ++i) {
    const std::int64_t ih = top + i * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    const T* prow = padded + ih * p.row + ow0;
    // Lane l reads padded column (ow0 + l) * sw + j * dw: phase r, column q of the phase.
    std::int64_t q = 0, r = 0;
    for (std::int64_t j = 0; j < g.kw; ++j) {
      V v;
      std::memcpy(&v, prow + r * p.wq + q, sizeof(V));
      const auto take = (v > m) | (v != v);
      const T t = static_cast<T>(i * g.dh * g.w + j * g.dw);
      m = take ? v : m;
      tap = take ? V{} + t : tap;
      r += g.dw;
      while (r >= g.sw) {
        r -= g.sw;
        ++q;
      }
    }
  }
  std::int64_t h0 = top;
  while (h0 < 0) h0 += g.dh;
  const std::int64_t n = std::min(L, g.wo - ow0);
  for (std::int64_t l = 0; l < n; ++l) {
    const std::int64_t left = (ow0 + l) * g.sw - g.pw;
    out_row[ow0 + l] = m[l];
    if (tap[l] < T(0)) {
      // PyTorch's initial index: the first in-bounds element of the (clipped) window.
      std::int64_t w0 = left;
      while (w0 < 0) w0 += g.dw;
      idx_row[ow0 + l] = h0 * g.w + w0;
    } else {
      idx_row[ow0 + l] = top * g.w + left + static_cast<std::int64_t>(tap[l]);
    }
  }
}

// The reference loop, for planes too large for a tap's offset to be exact in T.
template <typename T>
void max_pool_forward_generic(const T* x, const PoolGeometry& g, T* out, std::int64_t* idx) {
#pragma omp parallel for schedule(static) if (g.planes * g.ho * g.wo * g.kh * g.kw > kParallelGrain)
  for (std::int64_t pl = 0; pl < g.planes; ++pl) {
    const T* in = x + pl * g.h * g.w;
    for (std::int64_t oh = 0; oh < g.ho; ++oh) {
      std::int64_t h0 = oh * g.sh - g.ph;
      const std::int64_t h1 = std::min(h0 + (g.kh - 1) * g.dh + 1, g.h);
      while (h0 < 0) h0 += g.dh;
      for (std::int64_t ow = 0; ow < g.wo; ++ow) {
        std::int64_t w0 = ow * g.sw - g.pw;
        const std::int64_t w1 = std::min(w0 + (g.kw - 1) * g.dw + 1, g.w);
        while (w0 < 0) w0 += g.dw;
        // PyTorch's rule: the first strictly greater value wins, and NaN propagates.
        std::int64_t best = h0 * g.w + w0;
        T m = -std::numeric_limits<T>::infinity();
        for (std::int64_t ih = h0; ih < h1; ih += g.dh)
          for (std::int64_t iw = w0; iw < w1; iw += g.dw) {
            const T v = in[ih * g.w + iw];
            // Branch-free (data-dependent branches mispredict on real activations).
            const bool take = v > m || v != v;
            m = take ? v : m;
            best = take ? ih * g.w + iw : best;
          }
        const std::int64_t o = (pl * g.ho + oh) * g.wo + ow;
        out[o] = m;
        idx[o] = best;
      }
    }
  }
}

// Over volumes (3-D windows), in PyTorch's order: depth, then rows, then columns, the first
// strictly greater value winning and NaN propagating; indices are flat within a volume.
template <typename T>
void max_pool_forward_volume(const T* x, const PoolGeometry& g, T* out, std::int64_t* idx) {
  const std::int64_t work = g.planes * g.out_size() * g.kt * g.kh * g.kw;
#pragma omp parallel for schedule(static) if (work > kParallelGrain)
  for (std::int64_t pl = 0; pl < g.planes; ++pl) {
    const T* in = x + pl * g.in_size();
    for (std::int64_t ot = 0; ot < g.to; ++ot) {
      std::int64_t t0 = ot * g.st - g.pt;
      const std::int64_t t1 = std::min(t0 + (g.kt - 1) * g.dt + 1, g.t);
      while (t0 < 0) t0 += g.dt;
      for (std::int64_t oh = 0; oh < g.ho; ++oh) {
        std::int64_t h0 = oh * g.sh - g.ph;
        const std::int64_t h1 = std::min(h0 + (g.kh - 1) * g.dh + 1, g.h);
        while (h0 < 0) h0 += g.dh;
        for (std::int64_t ow = 0; ow < g.wo; ++ow) {
          std::int64_t w0 = ow * g.sw - g.pw;
          const std::int64_t w1 = std::min(w0 + (g.kw - 1) * g.dw + 1, g.w);
          while (w0 < 0) w0 += g.dw;
          std::int64_t best = (t0 * g.h + h0) * g.w + w0;
          T m = -std::numeric_limits<T>::infinity();
          for (std::int64_t it = t0; it < t1; it += g.dt)
            for (std::int64_t ih = h0; ih < h1; ih += g.dh)
              for (std::int64_t iw = w0; iw < w1; iw += g.dw) {
                const std::int64_t at = (it * g.h + ih) * g.w + iw;
                const T v = in[at];
                const bool take = v > m || v != v;
                m = take ? v : m;
                best = take ? at : best;
              }
          const std::int64_t o = pl * g.out_size() + (ot * g.ho + oh) * g.wo + ow;
          out[o] = m;
          idx[o] = best;
        }
      }
    }
  }
}

template <typename T>
void max_pool_forward_fast(const T* x, const PoolGeometry& g, T* out, std::int64_t* idx);

template <typename T>
void max_pool_forward(const T* x, const PoolGeometry& g, T* out, std::int64_t* idx) {
  if (!g.planar()) {
    if (out) max_pool_forward_volume(x, g, out, idx);
    return;
  }
  if constexpr (is_reduced_v<T>) {
    // bfloat16 and float16 compare exactly as they are: the reference loop, no scratch plane.
    if (out) max_pool_forward_generic(x, g, out, idx);
  } else {
    max_pool_forward_fast(x, g, out, idx);
  }
}

template <typename T>
void max_pool_forward_fast(const T* x, const PoolGeometry& g, T* out, std::int64_t* idx) {
  const std::int64_t max_offset = (g.kh - 1) * g.dh * g.w + (g.kw - 1) * g.dw;
  if (max_offset >= (std::int64_t{1} << std::numeric_limits<T>::digits)) {
    if (out) max_pool_forward_generic(x, g, out, idx);
    return;
  }
  const MaxPoolPlan<T> p(g);
  const std::int64_t work = g.planes * g.ho * g.wo * g.kh * g.kw;
  const bool parallel = work > kParallelGrain && !omp_in_parallel();
  // One scratch plane per thread, a Tensor so that the ledger counts it as temporary memory.
  Tensor scratch =
      Tensor::empty({parallel ? omp_get_max_threads() : 1, g.h * p.row}, dtype_of<T>());
  if (!out) return;  // a dry run (meta): the scratch is allocated, nothing is computed
#pragma omp parallel if (parallel)
  {
    T* const padded = scratch.data<T>() + omp_get_thread_num() * g.h * p.row;
#pragma omp for schedule(static)
    for (std::int64_t pl = 0; pl < g.planes; ++pl) {
      max_pool_pad_plane<T>(x + pl * g.h * g.w, g, p, padded);
      for (std::int64_t oh = 0; oh < g.ho; ++oh)
        for (std::int64_t b = 0; b < p.blocks; ++b)
          max_pool_block<T>(padded, g, p, oh, b * MaxPoolPlan<T>::kLanes,
                            out + (pl * g.ho + oh) * g.wo, idx + (pl * g.ho + oh) * g.wo);
    }
  }
}

}  // namespace

Tensor max_pool(const Tensor& x_in, int dims, const PoolInts& kernel, const PoolInts& stride,
                const PoolInts& padding, const PoolInts& dilation, bool ceil_mode) {
  OpScope op("max_pool");
  if (dims == 1) {
    // PyTorch 1.13's max_pool1d: max_pool2d over a unit height (MaxPool2DWithIndicesBackward0
    // saving the unsqueezed input's view and the indices).
    check_pool_input("max_pool1d", x_in, 1);
    const auto one = [](const PoolInts& v, std::int64_t unit) {
      return v.empty() ? PoolInts{} : PoolInts{unit, v.at(0)};
    };
    if (kernel.size() != 1 || stride.size() > 1 || padding.size() != 1 || dilation.size() != 1)
      throw std::invalid_argument(
          "max_pool1d: kernel_size, stride, padding and dilation must "
          "be single ints");
    return squeeze(max_pool(unsqueeze(x_in, -2), 2, one(kernel, 1), one(stride, 1), one(padding, 0),
                            one(dilation, 1), ceil_mode),
                   -2);
  }
  const std::string fn = rank_name("max_pool", dims, "d");
  const PoolGeometry g =
      pool_geometry(fn.c_str(), x_in, dims, kernel, stride, padding, dilation, ceil_mode);
  const Tensor x = as_contiguous(x_in);
  const Shape os = pooled_shape(x, g);
  Tensor out = Tensor::empty(os, x.dtype());
  Tensor indices = Tensor::empty(os, DType::i64);
  dispatch_floating_all(x.dtype(), fn.c_str(), [&]<typename T>() {
    const bool live = !out.is_meta();
    max_pool_forward<T>(data_or_null<T>(x, live), g, data_or_null<T>(out, live),
                        data_or_null<std::int64_t>(indices, live));
  });
  record(dims == 3 ? "MaxPool3DWithIndicesBackward0" : "MaxPool2DWithIndicesBackward0", {x_in},
         {out}, {x_in, indices}, [g, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           const Tensor& idx = c.saved[1];
           // Each plane is zeroed just before its scatter, while it is in cache (no separate
           // pass over the whole gradient).
           Tensor dx = Tensor::empty(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "max_pool backward", [&]<typename T>() {
               const T* gp = gy.data<T>();
               const std::int64_t* ip = idx.data<std::int64_t>();
               T* dp = dx.data<T>();
               const std::int64_t per = g.out_size(), plane = g.in_size();
#pragma omp parallel for schedule(static) if (g.planes * plane > kParallelGrain)
               for (std::int64_t pl = 0; pl < g.planes; ++pl) {
                 T* d = dp + pl * plane;
                 std::fill(d, d + plane, T(0));
                 for (std::int64_t o = 0; o < per; ++o) d[ip[pl * per + o]] += gp[pl * per + o];
               }
             });
           return {dx};
         });
  return out;
}

}  // namespace ckpt
