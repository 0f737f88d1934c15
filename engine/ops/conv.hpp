#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/kernels/conv_geometry.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Sets the algorithm for convolution calls on this thread for the scope's lifetime. A
// forward's choice also drives its backward, wherever that runs.
class ConvAlgorithmScope {
 public:
  explicit ConvAlgorithmScope(ConvAlgorithm algorithm);
  ~ConvAlgorithmScope();
  ConvAlgorithmScope(const ConvAlgorithmScope&) = delete;
  ConvAlgorithmScope& operator=(const ConvAlgorithmScope&) = delete;

 private:
  ConvAlgorithm previous_;
};
ConvAlgorithm conv_algorithm();

// A window's per-dimension values (stride, padding, dilation): one per spatial dimension, or
// one for all of them, as torch.nn.functional takes an int or a tuple.
using ConvInts = std::vector<std::int64_t>;

// F.conv1d, F.conv2d and F.conv3d: x [N, C, *spatial] (or unbatched [C, *spatial]) with 1, 2
// or 3 spatial dimensions, weight [O, C / groups, *kernel] of the same rank, bias [O] or
// undefined. Saves input and weight (ConvolutionBackward0), whichever needs a gradient, at
// every rank. The im2col workspace is a Tensor, so the ledger counts it as temporary memory.
Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias /*may be undefined*/,
            const ConvInts& stride = {1}, const ConvInts& padding = {0},
            const ConvInts& dilation = {1}, std::int64_t groups = 1);

// F.conv_transpose1d/2d/3d: x [N, Cin, *spatial] (or unbatched), weight [Cin, Cout / groups,
// *kernel], bias [Cout] or undefined; each output extent is (in - 1) * stride - 2 * padding +
// dilation * (k - 1) + output_padding + 1. Computed by the convolution's kernels as the adjoint
// of a convolution; saves input and weight (ConvolutionBackward0, transposed=True).
Tensor conv_transpose(const Tensor& x, const Tensor& weight,
                      const Tensor& bias /*may be undefined*/, const ConvInts& stride = {1},
                      const ConvInts& padding = {0}, const ConvInts& output_padding = {0},
                      const ConvInts& dilation = {1}, std::int64_t groups = 1);

// The 2-D spellings, for callers that hold pairs.
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                     std::array<std::int64_t, 2> stride = {1, 1},
                     std::array<std::int64_t, 2> padding = {0, 0},
                     std::array<std::int64_t, 2> dilation = {1, 1}, std::int64_t groups = 1) {
  return conv(x, weight, bias, {stride[0], stride[1]}, {padding[0], padding[1]},
              {dilation[0], dilation[1]}, groups);
}
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               std::array<std::int64_t, 2> stride = {1, 1},
                               std::array<std::int64_t, 2> padding = {0, 0},
                               std::array<std::int64_t, 2> output_padding = {0, 0},
                               std::array<std::int64_t, 2> dilation = {1, 1},
                               std::int64_t groups = 1) {
  return conv_transpose(x, weight, bias, {stride[0], stride[1]}, {padding[0], padding[1]},
                        {output_padding[0], output_padding[1]}, {dilation[0], dilation[1]}, groups);
}

}  // namespace ckpt
