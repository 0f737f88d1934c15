#include "engine/ops/conv.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/ops/blas.hpp"
#include "engine/ops/kernels.hpp"
#include "engine/ops/shape_ops.hpp"

namespace ckpt {

namespace {

struct ConvGeometry {
  std::int64_t n, c, h, w;  // input
  std::int64_t o, kh, kw;   // weight
  std::int64_t sh, sw, ph, pw, dh, dw, groups;
  std::int64_t ho, wo;  // output
  std::int64_t cg() const { return c / groups; }
  std::int64_t og() const { return o / groups; }
  std::int64_t kk() const { return kh * kw; }
  std::int64_t k_rows() const { return c * kh * kw; }  // rows of the column matrix
  std::int64_t hw_out() const { return ho * wo; }
  std::int64_t cols() const { return n * ho * wo; }  // columns: (image, output pixel)
};

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

// col[(c*kh + i)*kw + j, n*HoWo + oh*Wo + ow] = x[n, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]
template <typename T>
void im2col(const T* x, const ConvGeometry& g, T* col) {
  const std::int64_t rows = g.k_rows();
  const std::int64_t ncols = g.cols();
#pragma omp parallel for schedule(static) if (rows * ncols > kParallelGrain)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t c = r / g.kk();
    const std::int64_t i = (r / g.kw) % g.kh;
    const std::int64_t j = r % g.kw;
    std::int64_t ow_lo, ow_hi, oh_lo, oh_hi;
    valid_range(g.wo, g.sw, g.pw, j * g.dw, g.w, ow_lo, ow_hi);
    valid_range(g.ho, g.sh, g.ph, i * g.dh, g.h, oh_lo, oh_hi);
    T* dst_row = col + r * ncols;
    for (std::int64_t n = 0; n < g.n; ++n) {
      const T* plane = x + (n * g.c + c) * g.h * g.w;
      T* dst = dst_row + n * g.hw_out();
      for (std::int64_t oh = 0; oh < g.ho; ++oh) {
        T* d = dst + oh * g.wo;
        if (oh < oh_lo || oh >= oh_hi) {
          std::fill(d, d + g.wo, T(0));
          continue;
        }
        // Index arithmetic, not pointers: the row may start left of the plane (padding).
        const std::int64_t base = (oh * g.sh - g.ph + i * g.dh) * g.w - g.pw + j * g.dw;
        std::fill(d, d + ow_lo, T(0));
        if (g.sw == 1) {
          if (ow_hi > ow_lo)
            std::memcpy(d + ow_lo, plane + (base + ow_lo),
                        static_cast<std::size_t>(ow_hi - ow_lo) * sizeof(T));
        } else {
          for (std::int64_t ow = ow_lo; ow < ow_hi; ++ow) d[ow] = plane[base + ow * g.sw];
        }
        std::fill(d + ow_hi, d + g.wo, T(0));
      }
    }
  }
}

// The adjoint of im2col: dx[n, c, ...] += dcol[...]. Parallel over channels (no two share an
// input element).
template <typename T>
void col2im(const T* dcol, const ConvGeometry& g, T* dx) {
  const std::int64_t ncols = g.cols();
#pragma omp parallel for schedule(static) if (g.k_rows() * ncols > kParallelGrain)
  for (std::int64_t c = 0; c < g.c; ++c) {
    for (std::int64_t i = 0; i < g.kh; ++i) {
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t r = (c * g.kh + i) * g.kw + j;
        std::int64_t ow_lo, ow_hi, oh_lo, oh_hi;
        valid_range(g.wo, g.sw, g.pw, j * g.dw, g.w, ow_lo, ow_hi);
        valid_range(g.ho, g.sh, g.ph, i * g.dh, g.h, oh_lo, oh_hi);
        for (std::int64_t n = 0; n < g.n; ++n) {
          T* plane = dx + (n * g.c + c) * g.h * g.w;
          const T* src = dcol + r * ncols + n * g.hw_out();
          for (std::int64_t oh = oh_lo; oh < oh_hi; ++oh) {
            const std::int64_t base = (oh * g.sh - g.ph + i * g.dh) * g.w - g.pw + j * g.dw;
            const T* s = src + oh * g.wo;
            for (std::int64_t ow = ow_lo; ow < ow_hi; ++ow) plane[base + ow * g.sw] += s[ow];
          }
        }
      }
    }
  }
}

// A 1x1, stride-1, unpadded convolution of a single image reads its input as the column
// matrix directly.
bool input_is_col(const ConvGeometry& g) {
  return g.n == 1 && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// The column matrix of x: a temporary workspace tensor (or x itself, see input_is_col).
template <typename T>
Tensor columns(const Tensor& x, const ConvGeometry& g) {
  if (input_is_col(g)) return x;
  Tensor col = Tensor::empty({g.k_rows(), g.cols()}, x.dtype());
  im2col<T>(x.data<T>(), g, col.data<T>());
  return col;
}

template <typename T>
Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g) {
  Tensor out = Tensor::empty({g.n, g.o, g.ho, g.wo}, x.dtype());
  const Tensor col = columns<T>(x, g);
  const std::int64_t hw = g.hw_out();
  // With one image the GEMM writes the output in place; otherwise into [O, N*HoWo] first.
  Tensor mat = g.n == 1 ? out : Tensor::empty({g.o, g.cols()}, x.dtype());
  const T* wp = w.data<T>();
  const T* cp = col.data<T>();
  T* mp = mat.data<T>();
  const std::int64_t kg = g.cg() * g.kk();
  for (std::int64_t grp = 0; grp < g.groups; ++grp)
    gemm_rm<T>(false, false, g.og(), g.cols(), kg, T(1), wp + grp * g.og() * kg, kg,
               cp + grp * kg * g.cols(), g.cols(), T(0), mp + grp * g.og() * g.cols(), g.cols());
  T* op = out.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  if (g.n == 1) {
    if (bp) {
#pragma omp parallel for schedule(static) if (g.o * hw > kParallelGrain)
      for (std::int64_t o = 0; o < g.o; ++o)
        for (std::int64_t p = 0; p < hw; ++p) op[o * hw + p] += bp[o];
    }
    return out;
  }
#pragma omp parallel for collapse(2) schedule(static) if (g.o * g.cols() > kParallelGrain)
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
TensorList conv_backward(const Tensor& grad_in, const Tensor& x, const Tensor& w,
                         const ConvGeometry& g, const std::vector<bool>& need, bool has_bias) {
  const Tensor gy = as_contiguous(grad_in);
  const std::int64_t hw = g.hw_out();
  const std::int64_t kg = g.cg() * g.kk();
  // dY as [O, N*HoWo], the layout of the forward's GEMM output.
  Tensor gmat = gy;
  if (g.n != 1) {
    gmat = Tensor::empty({g.o, g.cols()}, gy.dtype());
    const T* s = gy.data<T>();
    T* d = gmat.data<T>();
#pragma omp parallel for collapse(2) schedule(static) if (g.o * g.cols() > kParallelGrain)
    for (std::int64_t n = 0; n < g.n; ++n)
      for (std::int64_t o = 0; o < g.o; ++o)
        std::memcpy(d + o * g.cols() + n * hw, s + (n * g.o + o) * hw,
                    static_cast<std::size_t>(hw) * sizeof(T));
  }
  const T* gp = gmat.data<T>();
  TensorList r(has_bias ? 3 : 2);
  if (need[0]) {
    Tensor dx = Tensor::zeros({g.n, g.c, g.h, g.w}, x.dtype());
    if (input_is_col(g)) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp)
        gemm_rm<T>(true, false, kg, g.cols(), g.og(), T(1), w.data<T>() + grp * g.og() * kg, kg,
                   gp + grp * g.og() * g.cols(), g.cols(), T(0), dx.data<T>() + grp * kg * g.cols(),
                   g.cols());
    } else {
      Tensor dcol = Tensor::empty({g.k_rows(), g.cols()}, x.dtype());
      for (std::int64_t grp = 0; grp < g.groups; ++grp)
        gemm_rm<T>(true, false, kg, g.cols(), g.og(), T(1), w.data<T>() + grp * g.og() * kg, kg,
                   gp + grp * g.og() * g.cols(), g.cols(), T(0),
                   dcol.data<T>() + grp * kg * g.cols(), g.cols());
      col2im<T>(dcol.data<T>(), g, dx.data<T>());
    }
    r[0] = dx;
  }
  if (need[1]) {
    Tensor dw = Tensor::empty(w.shape(), w.dtype());
    const Tensor col = columns<T>(x, g);
    for (std::int64_t grp = 0; grp < g.groups; ++grp)
      gemm_rm<T>(false, true, g.og(), kg, g.cols(), T(1), gp + grp * g.og() * g.cols(), g.cols(),
                 col.data<T>() + grp * kg * g.cols(), g.cols(), T(0),
                 dw.data<T>() + grp * g.og() * kg, kg);
    r[1] = dw;
  }
  if (has_bias && need[2]) {
    Tensor db = Tensor::empty({g.o}, gy.dtype());
    T* d = db.data<T>();
#pragma omp parallel for schedule(static) if (g.o * g.cols() > kParallelGrain)
    for (std::int64_t o = 0; o < g.o; ++o) {
      double acc = 0;
      const T* row = gp + o * g.cols();
      for (std::int64_t p = 0; p < g.cols(); ++p) acc += row[p];
      d[o] = static_cast<T>(acc);
    }
    r[2] = db;
  }
  return r;
}

std::string shape_list(const Shape& s) {
  return shape_str(s);
}

ConvGeometry check_geometry(const Tensor& x, const Tensor& w, const Tensor& bias,
                            std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
                            std::array<std::int64_t, 2> dilation, std::int64_t groups) {
  if (w.dim() != 4)
    throw std::invalid_argument("conv2d: expected a 4-D weight [out, in/groups, kh, kw], got " +
                                shape_list(w.shape()));
  if (stride[0] <= 0 || stride[1] <= 0)
    throw std::invalid_argument("conv2d: non-positive stride is not supported");
  if (padding[0] < 0 || padding[1] < 0)
    throw std::invalid_argument("conv2d: negative padding is not supported");
  if (dilation[0] <= 0 || dilation[1] <= 0)
    throw std::invalid_argument("conv2d: dilation should be greater than zero");
  if (groups <= 0) throw std::invalid_argument("conv2d: non-positive groups is not supported");
  if (x.dtype() != w.dtype() || !is_floating(x.dtype()))
    throw std::invalid_argument("conv2d: input " + x.str() + " and weight " + w.str() +
                                " must have the same floating dtype");
  ConvGeometry g{};
  g.n = x.shape()[0];
  g.c = x.shape()[1];
  g.h = x.shape()[2];
  g.w = x.shape()[3];
  g.o = w.shape()[0];
  g.kh = w.shape()[2];
  g.kw = w.shape()[3];
  g.sh = stride[0];
  g.sw = stride[1];
  g.ph = padding[0];
  g.pw = padding[1];
  g.dh = dilation[0];
  g.dw = dilation[1];
  g.groups = groups;
  if (g.o % groups != 0)
    throw std::invalid_argument("conv2d: Given groups=" + std::to_string(groups) +
                                ", expected weight to be divisible by " + std::to_string(groups) +
                                " at dimension 0, but got weight of size [" +
                                shape_list(w.shape()) + "] instead");
  if (w.shape()[1] * groups != g.c)
    throw std::invalid_argument("conv2d: Given groups=" + std::to_string(groups) +
                                ", weight of size " + shape_list(w.shape()) + ", expected input" +
                                shape_list(x.shape()) + " to have " +
                                std::to_string(w.shape()[1] * groups) + " channels, but got " +
                                std::to_string(g.c) + " channels instead");
  if (bias.defined() && (bias.dim() != 1 || bias.shape()[0] != g.o))
    throw std::invalid_argument("conv2d: Given weight of size " + shape_list(w.shape()) +
                                ", expected bias to be 1-dimensional with " + std::to_string(g.o) +
                                " elements, but got bias of size " + shape_list(bias.shape()) +
                                " instead");
  if (bias.defined() && bias.dtype() != x.dtype())
    throw std::invalid_argument("conv2d: bias " + bias.str() + " does not match input " + x.str());
  const std::int64_t eh = g.dh * (g.kh - 1) + 1;
  const std::int64_t ew = g.dw * (g.kw - 1) + 1;
  if (g.h + 2 * g.ph < eh || g.w + 2 * g.pw < ew)
    throw std::invalid_argument(
        "conv2d: Calculated padded input size per channel: (" + std::to_string(g.h + 2 * g.ph) +
        " x " + std::to_string(g.w + 2 * g.pw) + "). Kernel size: (" + std::to_string(eh) + " x " +
        std::to_string(ew) + "). Kernel size can't be greater than actual input size");
  g.ho = (g.h + 2 * g.ph - eh) / g.sh + 1;
  g.wo = (g.w + 2 * g.pw - ew) / g.sw + 1;
  return g;
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
              std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
              std::array<std::int64_t, 2> dilation, std::int64_t groups) {
  if (x_in.dim() == 3) {
    // Unbatched input, as PyTorch does it: unsqueeze, convolve, squeeze (views).
    return squeeze(conv2d(unsqueeze(x_in, 0), weight, bias, stride, padding, dilation, groups), 0);
  }
  OpScope op("conv2d");
  if (x_in.dim() != 4)
    throw std::invalid_argument("conv2d: expected 3-D (unbatched) or 4-D (batched) input, got " +
                                x_in.str());
  const ConvGeometry g = check_geometry(x_in, weight, bias, stride, padding, dilation, groups);
  const Tensor x = as_contiguous(x_in);
  const Tensor w = as_contiguous(weight);
  Tensor out = dispatch_floating(x.dtype(), "conv2d", [&]<typename T>() {
    return conv_forward<T>(x, w, bias.defined() ? as_contiguous(bias) : Tensor(), g);
  });
  TensorList inputs{x_in, weight};
  if (bias.defined()) inputs.push_back(bias);
  record("ConvolutionBackward0", inputs, {out}, {x_in, weight},
         [g, has_bias = bias.defined()](BackwardContext& c) -> TensorList {
           const Tensor x = as_contiguous(c.saved[0]);
           const Tensor w = as_contiguous(c.saved[1]);
           return dispatch_floating(x.dtype(), "conv2d backward", [&]<typename T>() {
             return conv_backward<T>(c.grads[0], x, w, g, c.needs_input_grad, has_bias);
           });
         });
  return out;
}

}  // namespace ckpt
