#pragma once

// bfloat16 and float16 tensors (torch.bfloat16, torch.float16: what autocast computes in), whose
// elements are Eigen's types. They are computed as ATen's CPU kernels compute them: each element
// is converted to float ("opmath") on load, the op's arithmetic runs in float, and the result is
// rounded once on store; sums and products accumulate in float. An op that computes in these
// dtypes says so by dispatching with dispatch_floating_all; every other op refuses them through
// dispatch_floating's error, which names the op and the dtype.
//
// Only the files that compute in the reduced dtypes include this header (Eigen/Core is heavy).

#include <Eigen/Core>
#include <type_traits>

#include "engine/tensor/dtype.hpp"

namespace ckpt {

using bfloat16 = Eigen::bfloat16;
using float16 = Eigen::half;

template <>
constexpr DType dtype_of<bfloat16>() {
  return DType::bf16;
}
template <>
constexpr DType dtype_of<float16>() {
  return DType::f16;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}

template <typename T>
inline constexpr bool is_reduced_v = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

// The type an element of T is computed in: float for the reduced dtypes, T otherwise.
template <typename T>
using opmath_t = std::conditional_t<is_reduced_v<T>, float, T>;

// T from an opmath value, rounded to nearest even for the reduced dtypes.
template <typename T>
inline T from_opmath(opmath_t<T> v) {
  return static_cast<T>(v);
}

// f.template operator()<T>() for every floating dtype, the reduced ones included: for the ops
// whose loops compute through opmath_t<T>.
template <typename F>
decltype(auto) dispatch_floating_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::bf16:
      return f.template operator()<bfloat16>();
    case DType::f16:
      return f.template operator()<float16>();
    default:
      return dispatch_floating(t, op, std::forward<F>(f));
  }
}

// Every dtype: copies, casts, fills and reads.
template <typename F>
decltype(auto) dispatch_every(DType t, F&& f) {
  switch (t) {
    case DType::bf16:
      return f.template operator()<bfloat16>();
    case DType::f16:
      return f.template operator()<float16>();
    case DType::i32:
      return f.template operator()<std::int32_t>();
    default:
      return dispatch_any(t, std::forward<F>(f));
  }
}

}  // namespace ckpt
