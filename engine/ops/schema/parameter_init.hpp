#pragma once

// PyTorch's default initialisation of a layer's parameters, for the weights an ONNX file does
// not hold (its external data absent, its initializers stripped): a dry run needs only their
// shapes, a real run makes their values as `torch.nn`'s constructors would. Each op's ONNX rule
// says what its inputs are (OnnxRule::parameter_init); a tensor no rule names is made by its
// shape (below).

#include <cstdint>
#include <string>

#include "engine/tensor/generator.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

enum class InitKind : std::uint8_t {
  by_shape,  // no layer says: as a Linear's weight for 2-D and more, ones for fewer dimensions
  weight,    // kaiming_uniform_(a=√5): U(±1/√fan_in), fan_in = numel / size(0) (Linear, Conv)
  bias,      // U(±1/√fan_in) with the fan_in of the layer's weight (Linear, Conv)
  ones,      // a norm's weight, BatchNorm's running_var
  zeros,     // a norm's bias, BatchNorm's running_mean
  normal,    // N(0, 1) (nn.Embedding's weight)
};

struct ParameterInit {
  InitKind kind = InitKind::by_shape;
  std::int64_t fan_in = 0;  // the bias's weight's (0: from the tensor's own shape)
  std::string layer;        // the ONNX op that uses it ("Conv"), for the summary
};

// "kaiming_uniform(a=√5), fan_in 27 (Conv)".
std::string describe(const ParameterInit& init, const Shape& shape);
// The value, f32, drawn from `gen`.
Tensor make_parameter(const ParameterInit& init, const Shape& shape, Generator& gen);
// A generator for parameter `name` at run seed `seed`: the same value at every run of that
// seed, whatever else the model holds.
std::uint64_t parameter_seed(std::uint64_t seed, const std::string& name);

}  // namespace ckpt
