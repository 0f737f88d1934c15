#pragma once

#include <array>
#include <cstdint>

#include "engine/kernels/conv_geometry.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Sets the algorithm for conv2d calls on this thread for the scope's lifetime. A forward's
// choice also drives its backward, wherever that runs.
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

// F.conv2d: x [N, C, H, W] (or unbatched [C, H, W]), weight [O, C / groups, kh, kw], bias [O]
// or undefined. Saves input and weight (ConvolutionBackward0), whichever needs a gradient.
// The im2col workspace is a Tensor, so the ledger counts it as temporary memory of the step.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias /*may be undefined*/,
              std::array<std::int64_t, 2> stride = {1, 1},
              std::array<std::int64_t, 2> padding = {0, 0},
              std::array<std::int64_t, 2> dilation = {1, 1}, std::int64_t groups = 1);

// F.conv_transpose2d: x [N, Cin, H, W] (or unbatched), weight [Cin, Cout / groups, kh, kw],
// bias [Cout] or undefined; the output is [N, Cout, (H - 1) * stride - 2 * padding +
// dilation * (kh - 1) + output_padding + 1, ...]. Computed by conv2d's kernels as the adjoint
// of a convolution; saves input and weight (ConvolutionBackward0, transposed=True).
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight,
                        const Tensor& bias /*may be undefined*/,
                        std::array<std::int64_t, 2> stride = {1, 1},
                        std::array<std::int64_t, 2> padding = {0, 0},
                        std::array<std::int64_t, 2> output_padding = {0, 0},
                        std::array<std::int64_t, 2> dilation = {1, 1}, std::int64_t groups = 1);

}  // namespace ckpt
