#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ckpt {

// f32 is what models run in; f64 exists for finite-difference gradient checks; i64 carries
// indices, targets and ONNX shape arithmetic; b8 (PyTorch's torch.bool, one byte) carries the
// masks a model computes at run time (comparisons, where, casts and views only).
enum class DType : std::uint8_t { f32, f64, i64, b8 };

// meta: shapes, strides and bytes without data (a dry run; see device.hpp).
enum class Device : std::uint8_t { cpu, cuda, meta };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::b8:
      return 1;
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
  }
  return "?";
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64;
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

// Calls f.template operator()<T>() with T the C++ type of a floating dtype.
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32:
      return f.template operator()<float>();
    case DType::f64:
      return f.template operator()<double>();
    case DType::i64:
    case DType::b8:
      break;
  }
  throw std::invalid_argument(std::string(op) + ": expected a floating-point tensor, got " +
                              dtype_name(t));
}

// The numeric dtypes (a bool tensor is refused: arithmetic on masks is not an op of ours).
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
