#pragma once

// Deterministic random streams and PyTorch's default parameter initialisations.

#include <cstdint>

#include "engine/tensor/generator.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Separate streams derived from one seed, so that drawing more of one (a bigger batch, more
// dropout) never shifts another (the parameters).
enum class Stream : std::uint64_t { parameters = 1, inputs = 2, targets = 3, dropout = 4 };
std::uint64_t stream_seed(std::uint64_t seed, Stream stream);

// f32 tensors filled from `gen` (in the current ledger).
Tensor uniform_tensor(const Shape& shape, double low, double high, Generator& gen);
Tensor normal_tensor(const Shape& shape, double mean, double stddev, Generator& gen);
// Class indices in [0, classes), int64.
Tensor class_indices(const Shape& shape, std::int64_t classes, Generator& gen);
// Positions 0, 1, ..., n-1 along the last dimension, int64 (`torch.arange(T)`, expanded).
Tensor arange_indices(const Shape& shape);

// nn.Linear / nn.Conv2d defaults: kaiming_uniform_(a=sqrt(5)) for the weight, which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same bound for the bias.
Tensor default_weight(const Shape& shape, std::int64_t fan_in, Generator& gen);

}  // namespace ckpt
