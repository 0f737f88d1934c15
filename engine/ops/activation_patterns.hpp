#pragma once

// The forms PyTorch's exporter gives the activations that ONNX has no op for at the file's
// opset: the pattern rules of the gelu, silu, mish and hardswish rows (activation_rows.cpp,
// unary_rows.cpp).

#include <vector>

#include "engine/ops/schema/onnx_pattern.hpp"

namespace ckpt::activation_patterns {

std::vector<OnnxPattern> gelu();       // the Erf form and the Tanh form
std::vector<OnnxPattern> silu();       // x · Sigmoid(x)
std::vector<OnnxPattern> mish();       // x · Tanh(Softplus(x))
std::vector<OnnxPattern> hardswish();  // x · HardSigmoid(x) (opsets below 14), x · relu6(x + 3) / 6
std::vector<OnnxPattern> hardsigmoid();  // relu6(x + 3) / 6
std::vector<OnnxPattern> rsqrt();        // Div(1, Sqrt(x)), Reciprocal(Sqrt(x))
std::vector<OnnxPattern> glu();          // Mul(Split(x):0, Sigmoid(Split(x):1))

}  // namespace ckpt::activation_patterns
