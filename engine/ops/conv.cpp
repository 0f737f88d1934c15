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

Geometry check_geometry(const Tensor& x, const Tensor& w, const Tensor& bias,
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
  Geometry g{};
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
  g.algorithm = t_algorithm;
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

// The geometry of the conv2d whose adjoint conv_transpose2d is (conv_impl.hpp): its input is the
// transposed convolution's output, its output the transposed convolution's input.
Geometry check_transposed_geometry(const Tensor& x, const Tensor& w, const Tensor& bias,
                                   std::array<std::int64_t, 2> stride,
                                   std::array<std::int64_t, 2> padding,
                                   std::array<std::int64_t, 2> output_padding,
                                   std::array<std::int64_t, 2> dilation, std::int64_t groups) {
  const char* op = "conv_transpose2d";
  if (w.dim() != 4)
    throw std::invalid_argument(std::string(op) +
                                ": expected a 4-D weight [in, out/groups, kh, kw], got " +
                                shape_list(w.shape()));
  if (stride[0] <= 0 || stride[1] <= 0)
    throw std::invalid_argument(std::string(op) + ": non-positive stride is not supported");
  if (padding[0] < 0 || padding[1] < 0)
    throw std::invalid_argument(std::string(op) + ": negative padding is not supported");
  if (dilation[0] <= 0 || dilation[1] <= 0)
    throw std::invalid_argument(std::string(op) + ": dilation should be greater than zero");
  if (groups <= 0)
    throw std::invalid_argument(std::string(op) + ": non-positive groups is not supported");
  for (int d = 0; d < 2; ++d)
    if (output_padding[d] < 0 ||
        (output_padding[d] >= stride[d] && output_padding[d] >= dilation[d]))
      throw std::invalid_argument(std::string(op) +
                                  ": output padding must be smaller than either stride or "
                                  "dilation, but got output_padding_height: " +
                                  std::to_string(output_padding[0]) +
                                  " output_padding_width: " + std::to_string(output_padding[1]) +
                                  " stride_height: " + std::to_string(stride[0]) +
                                  " stride_width: " + std::to_string(stride[1]) +
                                  " dilation_height: " + std::to_string(dilation[0]) +
                                  " dilation_width: " + std::to_string(dilation[1]));
  if (x.dtype() != w.dtype() || !is_floating(x.dtype()))
    throw std::invalid_argument(std::string(op) + ": input " + x.str() + " and weight " + w.str() +
                                " must have the same floating dtype");
  if (w.shape()[0] != x.shape()[1])
    throw std::invalid_argument(std::string(op) + ": Given transposed=1, weight of size " +
                                shape_list(w.shape()) + ", expected input" + shape_list(x.shape()) +
                                " to have " + std::to_string(w.shape()[0]) + " channels, but got " +
                                std::to_string(x.shape()[1]) + " channels instead");
  if (w.shape()[0] % groups != 0)
    throw std::invalid_argument(std::string(op) + ": Given groups=" + std::to_string(groups) +
                                ", expected weight to be divisible by " + std::to_string(groups) +
                                " at dimension 0, but got weight of size [" +
                                shape_list(w.shape()) + "] instead");
  Geometry g{};
  g.n = x.shape()[0];
  g.o = x.shape()[1];
  g.ho = x.shape()[2];
  g.wo = x.shape()[3];
  g.c = w.shape()[1] * groups;
  g.kh = w.shape()[2];
  g.kw = w.shape()[3];
  g.sh = stride[0];
  g.sw = stride[1];
  g.ph = padding[0];
  g.pw = padding[1];
  g.dh = dilation[0];
  g.dw = dilation[1];
  g.groups = groups;
  g.algorithm = t_algorithm;
  if (bias.defined() && (bias.dim() != 1 || bias.shape()[0] != g.c))
    throw std::invalid_argument(
        std::string(op) + ": Given transposed=1, weight of size " + shape_list(w.shape()) +
        ", expected bias to be 1-dimensional with " + std::to_string(g.c) +
        " elements, but got bias of size " + shape_list(bias.shape()) + " instead");
  if (bias.defined() && bias.dtype() != x.dtype())
    throw std::invalid_argument(std::string(op) + ": bias " + bias.str() +
                                " does not match input " + x.str());
  g.h = (g.ho - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + output_padding[0] + 1;
  g.w = (g.wo - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + output_padding[1] + 1;
  if (g.h <= 0 || g.w <= 0)
    throw std::invalid_argument(std::string(op) + ": Given input size per channel: (" +
                                std::to_string(g.ho) + " x " + std::to_string(g.wo) +
                                "). Calculated output size per channel: (" + std::to_string(g.h) +
                                " x " + std::to_string(g.w) + "). Output size is too small");
  // The adjoint convolution must map the output back onto exactly the input's plane (an
  // output padding of at least the stride, allowed by a larger dilation, would not).
  const std::int64_t ho = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  const std::int64_t wo = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (ho != g.ho || wo != g.wo)
    throw std::invalid_argument(
        std::string(op) + ": output padding of " + std::to_string(output_padding[0]) + ", " +
        std::to_string(output_padding[1]) + " at least the stride is not supported");
  return g;
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
  const Geometry g = check_geometry(x_in, weight, bias, stride, padding, dilation, groups);
  const Tensor x = as_contiguous(x_in);
  const Tensor w = as_contiguous(weight);
  // Selective checkpointing hands back the forward's output instead of recomputing it.
  Tensor out = replay_saved_output("conv2d");
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

Tensor conv_transpose2d(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                        std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
                        std::array<std::int64_t, 2> output_padding,
                        std::array<std::int64_t, 2> dilation, std::int64_t groups) {
  if (x_in.dim() == 3) {
    return squeeze(conv_transpose2d(unsqueeze(x_in, 0), weight, bias, stride, padding,
                                    output_padding, dilation, groups),
                   0);
  }
  OpScope op("conv_transpose2d");
  if (x_in.dim() != 4)
    throw std::invalid_argument(
        "conv_transpose2d: expected 3-D (unbatched) or 4-D (batched) input, got " + x_in.str());
  const Geometry g = check_transposed_geometry(x_in, weight, bias, stride, padding, output_padding,
                                               dilation, groups);
  const Tensor x = as_contiguous(x_in);
  const Tensor w = as_contiguous(weight);
  Tensor out = replay_saved_output("conv_transpose2d");
  if (!out.defined())
    out = conv_detail::transposed_forward(x, w, bias.defined() ? as_contiguous(bias) : Tensor(), g);
  TensorList inputs{x_in, weight};
  if (bias.defined()) inputs.push_back(bias);
  // PyTorch's ConvolutionBackward0 with transposed=True: input and weight, as for conv2d.
  record("ConvolutionBackward0", inputs, {out}, {x_in, weight},
         [g, has_bias = bias.defined()](BackwardContext& c) -> TensorList {
           return conv_detail::transposed_backward(c.grads[0], as_contiguous(c.saved[0]),
                                                   as_contiguous(c.saved[1]), g, c.needs_input_grad,
                                                   has_bias);
         });
  return out;
}

}  // namespace ckpt
