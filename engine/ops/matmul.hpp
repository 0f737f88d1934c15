#pragma once

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// torch.matmul for 2-D and batched (broadcast batch dims) operands; 1-D operands are
// promoted as in NumPy. Saves a if b needs grad and b if a needs grad (MmBackward0/BmmBackward0).
Tensor matmul(const Tensor& a, const Tensor& b);
// F.linear: x [..., in] @ weight[out, in]^T + bias[out]. Saves x (if weight needs grad) and
// weight (if x needs grad), as addmm does; the bias saves nothing.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace ckpt
