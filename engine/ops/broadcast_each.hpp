#pragma once

// Loops over broadcast operands without copies (the mask ops: logical.cpp, mask.cpp), so that
// the ledger sees only an op's output, as in PyTorch.

#include <array>
#include <cstdint>
#include <vector>

#include "engine/tensor/reduced_float.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// f(i, offsets) for every element i of `shape` in row-major order, with each operand's storage
// offset (its strides aligned to `shape`, 0 on the dimensions it is broadcast along): no
// broadcast copies, so the ledger sees only the output, as in PyTorch.
template <std::size_t N, typename F>
void for_each_broadcast(const Shape& shape, const std::array<const Tensor*, N>& operands, F&& f) {
  const std::size_t nd = shape.size();
  std::array<std::vector<std::int64_t>, N> strides;
  for (std::size_t k = 0; k < N; ++k) {
    const Tensor& t = *operands[k];
    strides[k].assign(nd, 0);
    const std::size_t lead = nd - t.shape().size();
    for (std::size_t d = 0; d < t.shape().size(); ++d)
      strides[k][lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
  }
  const std::int64_t n = shape_numel(shape);
  std::vector<std::int64_t> idx(nd, 0);
  std::array<std::int64_t, N> off{};
  for (std::int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (auto d = static_cast<std::int64_t>(nd) - 1; d >= 0; --d) {
      const auto u = static_cast<std::size_t>(d);
      if (++idx[u] < shape[u]) {
        for (std::size_t k = 0; k < N; ++k) off[k] += strides[k][u];
        break;
      }
      for (std::size_t k = 0; k < N; ++k) off[k] -= strides[k][u] * (shape[u] - 1);
      idx[u] = 0;
    }
  }
}

// The values of a bool or numeric tensor as "is nonzero", read at a storage offset.
template <typename F>
void with_truth(const Tensor& t, F&& f) {
  dispatch_every(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    f([p](std::int64_t off) { return p[off] != T(0); });
  });
}

}  // namespace ckpt
