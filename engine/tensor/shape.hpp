#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

using Shape = std::vector<std::int64_t>;
using Strides = std::vector<std::int64_t>;

// Element count; throws std::invalid_argument on negative dimensions or when the count would
// overflow (an absurd shape must be a clear error, never an attempt to allocate).
std::int64_t shape_numel(const Shape& shape);
Strides contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);
// Wraps a possibly negative dim into [0, ndim); throws naming the op when out of range.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);
// Which of ndim dimensions a reduction over `dims` reduces (every one when dims is empty);
// each dim checked by wrap_dim. A 0-d tensor has no dimension to mark: dim 0 or -1 reduces
// its one element, as in PyTorch, and the mask is empty.
std::vector<bool> reduced_dims(const std::vector<std::int64_t>& dims, std::int64_t ndim,
                               const char* op);
// NumPy broadcasting of two shapes; throws with both shapes in the message.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ckpt
