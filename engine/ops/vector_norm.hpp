#pragma once

// The p-norm over dims (torch.norm(x, p, dim, keepdim), torch.linalg.vector_norm): what
// F.normalize divides by (cosine attention in Swin V2, CLIP's embeddings). One output
// allocation, the reduction accumulated in host scratch, as PyTorch's reduction kernel keeps it
// in registers. Saves its input and its result (NormBackward1 in 1.13, LinalgVectorNormBackward0
// in 2.x).

#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// p finite and >= 1; dims empty: every dim.
Tensor vector_norm(const Tensor& x, double p, const std::vector<std::int64_t>& dims, bool keepdim);

}  // namespace ckpt
