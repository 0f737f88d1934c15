#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Views share storage and save nothing for backward. A -1 in a shape is inferred.
Tensor view(const Tensor& x, const Shape& shape);     // needs a compatible layout
Tensor reshape(const Tensor& x, const Shape& shape);  // a view when possible, else a copy
Tensor flatten(const Tensor& x, std::int64_t start_dim = 0, std::int64_t end_dim = -1);
Tensor transpose(const Tensor& x, std::int64_t d0, std::int64_t d1);
Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims);
Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t end,
             std::int64_t step = 1);
Tensor unsqueeze(const Tensor& x, std::int64_t dim);
Tensor squeeze(const Tensor& x, std::int64_t dim);
Tensor expand(const Tensor& x, const Shape& shape);
// x.repeat(repeats) (ONNX Tile): the output's dim d is repeats[d] copies of x's (x read with
// leading 1s when repeats is longer). Saves nothing (RepeatBackward0); its backward sums the
// copies.
Tensor repeat(const Tensor& x, const Shape& repeats);
Tensor clone(const Tensor& x);       // a copy; saves nothing
Tensor contiguous(const Tensor& x);  // x itself, or a clone
// torch.cat; saves nothing. 1-D empty tensors ([0]) are skipped whatever the others' rank, as
// PyTorch's legacy rule has it.
Tensor cat(const std::vector<Tensor>& xs, std::int64_t dim);
bool skipped_by_cat(const Tensor& t);
// torch.constant_pad_nd: `before[d]` and `after[d]` elements of `value` around dimension d
// (none negative); saves nothing, its backward is the gradient's middle.
Tensor constant_pad(const Tensor& x, const Shape& before, const Shape& after, double value = 0);

}  // namespace ckpt
