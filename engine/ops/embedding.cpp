#include "engine/ops/embedding.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  OpScope op("embedding");
  if (indices.dtype() != DType::i64)
    throw std::invalid_argument(
        "embedding: Expected tensor for argument #1 'indices' to have one of the following scalar "
        "types: Long, Int; but got " +
        indices.str() + " instead");
  if (weight.dim() != 2)
    throw std::invalid_argument("embedding: 'weight' must be 2-D, got " + weight.str());
  const std::int64_t v = weight.shape()[0], d = weight.shape()[1];
  const Tensor idx = as_contiguous(indices);
  // Indices are values: a dry run (meta) cannot check them, and copies nothing below.
  const bool live = !idx.is_meta() && !weight.is_meta();
  const std::int64_t* ip = data_or_null<std::int64_t>(idx, live);
  for (std::int64_t i = 0; i < (live ? idx.numel() : 0); ++i)
    if (ip[i] < 0 || ip[i] >= v)
      throw std::out_of_range("embedding: index out of range in self (index " +
                              std::to_string(ip[i]) + " for a weight of " + std::to_string(v) +
                              " rows)");
  const Tensor w = as_contiguous(weight);
  Shape out_shape = indices.shape();
  out_shape.push_back(d);
  Tensor out = Tensor::empty(out_shape, w.dtype());
  // A gather copies rows: every dtype, the reduced ones (FSDP2's bf16 parameters) included.
  if (live && !out.is_meta())
    dispatch_every(w.dtype(), [&]<typename T>() {
      const T* wp = w.data<T>();
      T* op_ = out.data<T>();
      for (std::int64_t i = 0; i < idx.numel(); ++i)
        if (d) std::memcpy(op_ + i * d, wp + ip[i] * d, static_cast<std::size_t>(d) * sizeof(T));
    });
  record("EmbeddingBackward0", {weight, indices}, {out}, {indices, weight},
         [v, d](BackwardContext& c) -> TensorList {
           const Tensor g = as_contiguous(c.grads[0]);
           const Tensor idx2 = as_contiguous(c.saved[0]);
           Tensor dw = Tensor::zeros({v, d}, g.dtype());
           if (!dw.is_meta())
             // In bf16 each row's add is rounded, as index_add_ accumulates into the weight's
             // gradient (float32 and float64: exact as before).
             dispatch_floating_all(g.dtype(), "embedding backward", [&]<typename T>() {
               const T* gp = g.data<T>();
               const std::int64_t* ip2 = idx2.data<std::int64_t>();
               T* dp = dw.data<T>();
               for (std::int64_t i = 0; i < idx2.numel(); ++i)
                 for (std::int64_t k = 0; k < d; ++k)
                   dp[ip2[i] * d + k] =
                       from_opmath<T>(static_cast<opmath_t<T>>(dp[ip2[i] * d + k]) +
                                      static_cast<opmath_t<T>>(gp[i * d + k]));
             });
           return {dw, Tensor()};
         });
  return out;
}

}  // namespace ckpt
