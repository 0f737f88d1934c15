#include "engine/ops/conv.hpp"

#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/autograd/op_observer.hpp"
#include "engine/kernels/conv_impl.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/shape_ops.hpp"

namespace ckpt {

namespace {

using conv_detail::Geometry;

thread_local ConvAlgorithm t_algorithm = ConvAlgorithm::automatic;

std::string shape_list(const Shape& s) {
  return shape_str(s);
}

// F.conv1d, F.conv2d, ...: the PyTorch function a rank's messages name.
std::string function_name(const char* base, int dims) {
  return std::string(base) + std::to_string(dims) + "d";
}

// A window's values for `dims` spatial dimensions, placed in the last of Geometry's three
// (the leading ones `fill`): one value for all, or one per dimension.
std::array<std::int64_t, 3> spread(const ConvInts& v, int dims, std::int64_t fill,
                                   const std::string& fn, const char* what) {
  if (v.size() != 1 && v.size() != static_cast<std::size_t>(dims))
    throw std::invalid_argument(
        fn + ": expected " + what + " to be a single integer value or a list of " +
        std::to_string(dims) + " values to match the convolution dimensions, but got " + what +
        "=" + shape_list(v));
  std::array<std::int64_t, 3> r{fill, fill, fill};
  for (int d = 0; d < dims; ++d)
    r[static_cast<std::size_t>(3 - dims + d)] =
        v.size() == 1 ? v[0] : v[static_cast<std::size_t>(d)];
  return r;
}

// The last `dims` extents of `shape` from index 2, placed as spread() places them (leading 1).
std::array<std::int64_t, 3> spatial_extents(const Shape& shape, int dims) {
  std::array<std::int64_t, 3> r{1, 1, 1};
  for (int d = 0; d < dims; ++d)
    r[static_cast<std::size_t>(3 - dims + d)] = shape[static_cast<std::size_t>(2 + d)];
  return r;
}

// " x "-joined last `dims` of three values, as PyTorch's messages print a size.
std::string extents(const std::array<std::int64_t, 3>& v, int dims) {
  std::string s;
  for (int d = 3 - dims; d < 3; ++d) {
    if (!s.empty()) s += " x ";
    s += std::to_string(v[static_cast<std::size_t>(d)]);
  }
  return s;
}

struct Window {
  std::array<std::int64_t, 3> stride, padding, dilation;
};

Window check_window(const std::string& fn, int dims, const ConvInts& stride,
                    const ConvInts& padding, const ConvInts& dilation, std::int64_t groups) {
  Window win{spread(stride, dims, 1, fn, "stride"), spread(padding, dims, 0, fn, "padding"),
             spread(dilation, dims, 1, fn, "dilation")};
  for (int d = 0; d < 3; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (win.stride[i] <= 0)
      throw std::invalid_argument(fn + ": non-positive stride is not supported");
    if (win.padding[i] < 0) throw std::invalid_argument(fn + ": negative padding is not supported");
    if (win.dilation[i] <= 0)
      throw std::invalid_argument(fn + ": dilation should be greater than zero");
  }
  if (groups <= 0) throw std::invalid_argument(fn + ": non-positive groups is not supported");
  return win;
}

void set_window(Geometry& g, const Window& win, const std::array<std::int64_t, 3>& kernel) {
  g.kt = kernel[0];
  g.kh = kernel[1];
  g.kw = kernel[2];
  g.st = win.stride[0];
  g.sh = win.stride[1];
  g.sw = win.stride[2];
  g.pt = win.padding[0];
  g.ph = win.padding[1];
  g.pw = win.padding[2];
  g.dt = win.dilation[0];
  g.dh = win.dilation[1];
  g.dw = win.dilation[2];
}

Geometry check_geometry(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvInts& stride, const ConvInts& padding, const ConvInts& dilation,
                        std::int64_t groups) {
  const int dims = static_cast<int>(w.dim()) - 2;
  const std::string fn = function_name("conv", dims);
  const Window win = check_window(fn, dims, stride, padding, dilation, groups);
  if (x.dtype() != w.dtype() || !is_floating(x.dtype()))
    throw std::invalid_argument(fn + ": input " + x.str() + " and weight " + w.str() +
                                " must have the same floating dtype");
  Geometry g{};
  g.spatial = dims;
  g.n = x.shape()[0];
  g.c = x.shape()[1];
  const auto in = spatial_extents(x.shape(), dims);
  g.t = in[0];
  g.h = in[1];
  g.w = in[2];
  g.o = w.shape()[0];
  set_window(g, win, spatial_extents(w.shape(), dims));
  g.groups = groups;
  g.algorithm = t_algorithm;
  if (g.o % groups != 0)
    throw std::invalid_argument(fn + ": Given groups=" + std::to_string(groups) +
                                ", expected weight to be divisible by " + std::to_string(groups) +
                                " at dimension 0, but got weight of size [" +
                                shape_list(w.shape()) + "] instead");
  if (w.shape()[1] * groups != g.c)
    throw std::invalid_argument(fn + ": Given groups=" + std::to_string(groups) +
                                ", weight of size " + shape_list(w.shape()) + ", expected input" +
                                shape_list(x.shape()) + " to have " +
                                std::to_string(w.shape()[1] * groups) + " channels, but got " +
                                std::to_string(g.c) + " channels instead");
  if (bias.defined() && (bias.dim() != 1 || bias.shape()[0] != g.o))
    throw std::invalid_argument(fn + ": Given weight of size " + shape_list(w.shape()) +
                                ", expected bias to be 1-dimensional with " + std::to_string(g.o) +
                                " elements, but got bias of size " + shape_list(bias.shape()) +
                                " instead");
  if (bias.defined() && bias.dtype() != x.dtype())
    throw std::invalid_argument(fn + ": bias " + bias.str() + " does not match input " + x.str());
  const std::array<std::int64_t, 3> kernel{g.kt, g.kh, g.kw};
  std::array<std::int64_t, 3> padded{}, effective{}, out{};
  bool fits = true;
  for (std::size_t d = 0; d < 3; ++d) {
    padded[d] = in[d] + 2 * win.padding[d];
    effective[d] = win.dilation[d] * (kernel[d] - 1) + 1;
    fits = fits && padded[d] >= effective[d];
    out[d] = (padded[d] - effective[d]) / win.stride[d] + 1;
  }
  if (!fits)
    throw std::invalid_argument(fn + ": Calculated padded input size per channel: (" +
                                extents(padded, dims) + "). Kernel size: (" +
                                extents(effective, dims) +
                                "). Kernel size can't be greater than actual input size");
  g.to = out[0];
  g.ho = out[1];
  g.wo = out[2];
  return g;
}

// The geometry of the convolution whose adjoint the transposed convolution is (conv_impl.hpp):
// its input is the transposed convolution's output, its output the transposed convolution's
// input.
Geometry check_transposed_geometry(const Tensor& x, const Tensor& w, const Tensor& bias,
                                   const ConvInts& stride, const ConvInts& padding,
                                   const ConvInts& output_padding, const ConvInts& dilation,
                                   std::int64_t groups) {
  const int dims = static_cast<int>(w.dim()) - 2;
  const std::string fn = function_name("conv_transpose", dims);
  const Window win = check_window(fn, dims, stride, padding, dilation, groups);
  const auto out_pad = spread(output_padding, dims, 0, fn, "output_padding");
  for (std::size_t d = 0; d < 3; ++d)
    if (out_pad[d] < 0 || (out_pad[d] >= win.stride[d] && out_pad[d] >= win.dilation[d]))
      throw std::invalid_argument(
          fn +
          ": output padding must be smaller than either stride or dilation, but got "
          "output_padding: (" +
          extents(out_pad, dims) + ") stride: (" + extents(win.stride, dims) + ") dilation: (" +
          extents(win.dilation, dims) + ")");
  if (x.dtype() != w.dtype() || !is_floating(x.dtype()))
    throw std::invalid_argument(fn + ": input " + x.str() + " and weight " + w.str() +
                                " must have the same floating dtype");
  if (w.shape()[0] != x.shape()[1])
    throw std::invalid_argument(fn + ": Given transposed=1, weight of size " +
                                shape_list(w.shape()) + ", expected input" + shape_list(x.shape()) +
                                " to have " + std::to_string(w.shape()[0]) + " channels, but got " +
                                std::to_string(x.shape()[1]) + " channels instead");
  if (w.shape()[0] % groups != 0)
    throw std::invalid_argument(fn + ": Given groups=" + std::to_string(groups) +
                                ", expected weight to be divisible by " + std::to_string(groups) +
                                " at dimension 0, but got weight of size [" +
                                shape_list(w.shape()) + "] instead");
  Geometry g{};
  g.spatial = dims;
  g.n = x.shape()[0];
  g.o = x.shape()[1];
  const auto in = spatial_extents(x.shape(), dims);
  g.to = in[0];
  g.ho = in[1];
  g.wo = in[2];
  g.c = w.shape()[1] * groups;
  set_window(g, win, spatial_extents(w.shape(), dims));
  g.groups = groups;
  g.algorithm = t_algorithm;
  if (bias.defined() && (bias.dim() != 1 || bias.shape()[0] != g.c))
    throw std::invalid_argument(
        fn + ": Given transposed=1, weight of size " + shape_list(w.shape()) +
        ", expected bias to be 1-dimensional with " + std::to_string(g.c) +
        " elements, but got bias of size " + shape_list(bias.shape()) + " instead");
  if (bias.defined() && bias.dtype() != x.dtype())
    throw std::invalid_argument(fn + ": bias " + bias.str() + " does not match input " + x.str());
  const std::array<std::int64_t, 3> kernel{g.kt, g.kh, g.kw};
  std::array<std::int64_t, 3> out{};
  bool positive = true, exact = true;
  for (std::size_t d = 0; d < 3; ++d) {
    out[d] = (in[d] - 1) * win.stride[d] - 2 * win.padding[d] + win.dilation[d] * (kernel[d] - 1) +
             out_pad[d] + 1;
    positive = positive && out[d] > 0;
    // The adjoint convolution must map the output back onto exactly the input's extent (an
    // output padding of at least the stride, allowed by a larger dilation, would not).
    exact =
        exact &&
        (out[d] + 2 * win.padding[d] - win.dilation[d] * (kernel[d] - 1) - 1) / win.stride[d] + 1 ==
            in[d];
  }
  if (!positive)
    throw std::invalid_argument(fn + ": Given input size per channel: (" + extents(in, dims) +
                                "). Calculated output size per channel: (" + extents(out, dims) +
                                "). Output size is too small");
  if (!exact)
    throw std::invalid_argument(fn + ": output padding of (" + extents(out_pad, dims) +
                                ") at least the stride is not supported");
  g.t = out[0];
  g.h = out[1];
  g.w = out[2];
  return g;
}

// The rank of a convolution's weight, checked: 1, 2 or 3 spatial dimensions.
int spatial_dims(const Tensor& weight, const char* op, const char* layout) {
  if (weight.dim() < 3 || weight.dim() > 5)
    throw std::invalid_argument(std::string(op) + ": expected a weight " + layout +
                                " with 1, 2 or 3 spatial dimensions, got " +
                                shape_list(weight.shape()));
  return static_cast<int>(weight.dim()) - 2;
}

}  // namespace

ConvAlgorithmScope::ConvAlgorithmScope(ConvAlgorithm algorithm) : previous_(t_algorithm) {
  t_algorithm = algorithm;
}

ConvAlgorithmScope::~ConvAlgorithmScope() {
  t_algorithm = previous_;
}

ConvAlgorithm conv_algorithm() {
  return t_algorithm;
}

Tensor conv(const Tensor& x_in, const Tensor& weight, const Tensor& bias, const ConvInts& stride,
            const ConvInts& padding, const ConvInts& dilation, std::int64_t groups) {
  const int dims = spatial_dims(weight, "conv", "[out, in / groups, *kernel]");
  if (x_in.dim() == dims + 1) {
    // Unbatched input, as PyTorch does it: unsqueeze, convolve, squeeze (views).
    return squeeze(conv(unsqueeze(x_in, 0), weight, bias, stride, padding, dilation, groups), 0);
  }
  OpScope op("conv");
  if (x_in.dim() != dims + 2)
    throw std::invalid_argument("conv: Expected " + std::to_string(dims + 1) + "D (unbatched) or " +
                                std::to_string(dims + 2) + "D (batched) input to " +
                                function_name("conv", dims) +
                                ", but got input of size: " + shape_list(x_in.shape()));
  const Geometry g = check_geometry(x_in, weight, bias, stride, padding, dilation, groups);
  const Tensor x = as_contiguous(x_in);
  const Tensor w = as_contiguous(weight);
  // Selective checkpointing hands back the forward's output instead of recomputing it.
  Tensor out = replay_saved_output("conv");
  if (!out.defined())
    out = conv_detail::forward(x, w, bias.defined() ? as_contiguous(bias) : Tensor(), g);
  TensorList inputs{x_in, weight};
  if (bias.defined()) inputs.push_back(bias);
  record("ConvolutionBackward0", inputs, {out}, {x_in, weight},
         [g, has_bias = bias.defined()](BackwardContext& c) -> TensorList {
           return conv_detail::backward(c.grads[0], as_contiguous(c.saved[0]),
                                        as_contiguous(c.saved[1]), g, c.needs_input_grad, has_bias);
         });
  return out;
}

Tensor conv_transpose(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                      const ConvInts& stride, const ConvInts& padding,
                      const ConvInts& output_padding, const ConvInts& dilation,
                      std::int64_t groups) {
  const int dims = spatial_dims(weight, "conv_transpose", "[in, out / groups, *kernel]");
  if (x_in.dim() == dims + 1) {
    return squeeze(conv_transpose(unsqueeze(x_in, 0), weight, bias, stride, padding, output_padding,
                                  dilation, groups),
                   0);
  }
  OpScope op("conv_transpose");
  if (x_in.dim() != dims + 2)
    throw std::invalid_argument("conv_transpose: Expected " + std::to_string(dims + 1) +
                                "D (unbatched) or " + std::to_string(dims + 2) +
                                "D (batched) input to " + function_name("conv_transpose", dims) +
                                ", but got input of size: " + shape_list(x_in.shape()));
  const Geometry g = check_transposed_geometry(x_in, weight, bias, stride, padding, output_padding,
                                               dilation, groups);
  const Tensor x = as_contiguous(x_in);
  const Tensor w = as_contiguous(weight);
  Tensor out = replay_saved_output("conv_transpose");
  if (!out.defined())
    out = conv_detail::transposed_forward(x, w, bias.defined() ? as_contiguous(bias) : Tensor(), g);
  TensorList inputs{x_in, weight};
  if (bias.defined()) inputs.push_back(bias);
  // PyTorch's ConvolutionBackward0 with transposed=True: input and weight, as for conv.
  record("ConvolutionBackward0", inputs, {out}, {x_in, weight},
         [g, has_bias = bias.defined()](BackwardContext& c) -> TensorList {
           return conv_detail::transposed_backward(c.grads[0], as_contiguous(c.saved[0]),
                                                   as_contiguous(c.saved[1]), g, c.needs_input_grad,
                                                   has_bias);
         });
  return out;
}

}  // namespace ckpt
