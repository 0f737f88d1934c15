#pragma once

// Masks computed at run time: comparisons give bool tensors (one byte an element, as
// torch.bool), `where` selects by them, `cast` crosses between dtypes. A key padding mask that
// comes in as a model input (`pad > 0.5`, then `masked_fill` / `where` on the attention scores)
// is the case that needs them; masks known at load time are folded there instead.

#include "engine/tensor/tensor.hpp"

namespace ckpt {

enum class Comparison { gt, lt, ge, le, eq };

// a op b elementwise with broadcasting; bool result, no gradient (as PyTorch's gt, lt, ...).
// Operands of different numeric dtypes are compared as double.
Tensor compare(const Tensor& a, const Tensor& b, Comparison op);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);

// cond ? x : y with broadcasting over all three; cond is bool (or numeric: nonzero is true),
// x and y floating of one dtype. Saves cond when x or y requires grad (WhereBackward0).
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

// !x, bool result (x bool or numeric); no gradient.
Tensor logical_not(const Tensor& x);

// x converted to `to`. Between floating dtypes the gradient is cast back (ToCopyBackward0,
// nothing saved); to or from bool and int64 there is none.
Tensor cast(const Tensor& x, DType to);

}  // namespace ckpt
