#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ckpt {

// f32 is what models run in; f64 exists for finite-difference gradient checks; i64 carries
// indices, targets and ONNX shape arithmetic; b8 (PyTorch's torch.bool, one byte) carries the
// masks a model computes at run time (comparisons, where, casts and views only); bf16 and f16
// are what autocast computes in (torch.bfloat16, torch.float16: reduced_float.hpp); i32 is the
// gradient scaler's growth tracker (torch.int32; copies and fills only).
enum class DType : std::uint8_t { f32, f64, i64, b8, bf16, f16, i32 };

// meta: shapes, strides and bytes without data (a dry run; see device.hpp).
enum class Device : std::uint8_t { cpu, cuda, meta };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::b8:
      return 1;
    case DType::bf16:
    case DType::f16:
      return 2;
  }
  return 0;
}

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::i64:
      return "int64";
    case DType::b8:
      return "bool";
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
    case DType::i32:
      return "int32";
  }
  return "?";
}

// The lower precisions autocast computes in.
constexpr bool is_reduced_floating(DType t) {
  return t == DType::bf16 || t == DType::f16;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || is_reduced_floating(t);
}

// PyTorch's promote_types over the floating dtypes: the wider of the two (bfloat16 with float16
// is float32, as in PyTorch).
constexpr DType promote_floating(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  return DType::f32;
}

constexpr const char* device_name(Device d) {
  switch (d) {
    case Device::cpu:
      return "cpu";
    case Device::cuda:
      return "cuda";
    case Device::meta:
      return "meta";
  }
  return "?";
}

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::b8;
}

// An op without a kernel for a dtype it was handed: a clear error naming both.
[[noreturn]] inline void no_kernel_for(const char* op, DType t) {
  if (is_reduced_floating(t))
    throw std::invalid_argument(std::string(op) + " has no " + dtype_name(t) +
                                " kernel (float32 and float64 only): autocast cannot run it in " +
                                dtype_name(t));
  throw std::invalid_argument(std::string(op) + ": expected a floating-point tensor, got " +
                              dtype_name(t));
}

// Calls f.template operator()<T>() with T the C++ type of a floating dtype, float32 or float64;
// the reduced ones are refused naming the op (reduced_float.hpp's dispatch_floating_all takes
// them too).
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32:
      return f.template operator()<float>();
    case DType::f64:
      return f.template operator()<double>();
    default:
      break;
  }
  no_kernel_for(op, t);
}

// The numeric dtypes of full precision (a bool tensor is refused: arithmetic on masks is not an
// op of ours; the reduced ones go through reduced_float.hpp's dispatchers).
template <typename F>
decltype(auto) dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f.template operator()<float>();
    case DType::f64:
      return f.template operator()<double>();
    case DType::i64:
      return f.template operator()<std::int64_t>();
    case DType::b8:
      break;
    case DType::bf16:
    case DType::f16:
    case DType::i32:
      throw std::invalid_argument(std::string("no kernel for ") + dtype_name(t) +
                                  " tensors here (float32, float64 and int64 only)");
  }
  throw std::invalid_argument(
      "arithmetic on a bool tensor: bool tensors take comparisons, where, casts and views only");
}

// Every dtype, bool included: copies, casts, fills and reads.
template <typename F>
decltype(auto) dispatch_any(DType t, F&& f) {
  if (t == DType::b8) return f.template operator()<bool>();
  return dispatch_all(t, std::forward<F>(f));
}

}  // namespace ckpt
