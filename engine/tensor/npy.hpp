#pragma once

#include <string>
#include <string_view>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// NumPy .npy files (format 1.0/2.0; little-endian <f4, <f8, <i8; C order; 0-d allowed), so that
// weights, inputs and gradients cross to and from numpy and PyTorch. Errors name the file.
Tensor load_npy(const std::string& path);
// The same from bytes already read (`source` names them in errors): what the fuzzer feeds.
Tensor load_npy_bytes(std::string_view bytes, const std::string& source);
void save_npy(const std::string& path, const Tensor& t);

}  // namespace ckpt
