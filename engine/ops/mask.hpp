#pragma once

// Masks a forward builds for itself (captures, issue 37): nn.Transformer's causal mask
// (torch.full, torch.triu), nanoGPT's `masked_fill(bias == 0, -inf)`, nn.MultiheadAttention's
// merged masks (zeros_like, masked_fill_, logical_or) and Swin's shifted-window mask (new_zeros,
// slice assignment, ne, masked_fill). They are tensors of the forward like any other: allocated
// where PyTorch allocates them, computed in a real run, shapes only in a dry run; they carry no
// gradient, and what an op keeps of them for backward is what PyTorch keeps (MaskedFillBackward0
// saves the mask).

#include <string>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// torch.full(shape, value, dtype): zeros, ones, new_zeros, full_like, ... are this.
Tensor filled(const Shape& shape, double value, DType dtype);
// torch.arange(start, end, step, dtype): ceil((end - start) / step) values.
Tensor arange_range(double start, double end, double step, DType dtype);
// torch.triu(x, diagonal) (upper) or torch.tril(x, diagonal): the elements on and above (below)
// the diagonal, zeros elsewhere; over the last two dims. TriuBackward0 / TrilBackward0 save
// nothing.
Tensor trilu(const Tensor& x, std::int64_t diagonal, bool upper);
// x <op> value elementwise, op one of eq ne gt lt ge le; bool result, no gradient. The number is
// taken in x's dtype, as PyTorch wraps it.
Tensor compare_scalar(const Tensor& x, double value, const std::string& op);
// a != b with broadcasting; bool result.
Tensor not_equal(const Tensor& a, const Tensor& b);
// a and b, a or b (op "and", "or") of truth values with broadcasting; bool result.
Tensor logical_binary(const Tensor& a, const Tensor& b, const std::string& op);
// x where mask is false, value where it is true (mask broadcast to x's shape). Saves the mask
// when x requires grad (MaskedFillBackward0).
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
// In place, on a tensor that does not require grad (a mask being built).
Tensor& masked_fill_(Tensor& x, const Tensor& mask, double value);
Tensor& fill_(Tensor& x, double value);

}  // namespace ckpt
