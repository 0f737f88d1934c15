#include "engine/tensor/init.hpp"

#include <cmath>
#include <stdexcept>

namespace ckpt {

std::uint64_t stream_seed(std::uint64_t seed, Stream stream) {
  // splitmix64 of (seed, stream): well-mixed, independent-looking seeds per stream.
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(stream) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Tensor uniform_tensor(const Shape& shape, double low, double high, Generator& gen) {
  Tensor t = Tensor::empty(shape, DType::f32);
  if (t.is_meta()) return t;
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<float>(low + (high - low) * gen.uniform());
  return t;
}

Tensor normal_tensor(const Shape& shape, double mean, double stddev, Generator& gen) {
  Tensor t = Tensor::empty(shape, DType::f32);
  if (t.is_meta()) return t;
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<float>(mean + stddev * gen.normal());
  return t;
}

Tensor class_indices(const Shape& shape, std::int64_t classes, Generator& gen) {
  if (classes <= 0)
    throw std::invalid_argument("class_indices: the number of classes must be positive, got " +
                                std::to_string(classes));
  Tensor t = Tensor::empty(shape, DType::i64);
  if (t.is_meta()) return t;
  auto* p = t.data<std::int64_t>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<std::int64_t>(gen.next_u64() % static_cast<std::uint64_t>(classes));
  return t;
}

Tensor arange_indices(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::i64);
  if (t.is_meta()) return t;
  const std::int64_t n = shape.empty() ? 1 : shape.back();
  auto* p = t.data<std::int64_t>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = n ? i % n : 0;
  return t;
}

Tensor default_weight(const Shape& shape, std::int64_t fan_in, Generator& gen) {
  if (fan_in <= 0)
    throw std::invalid_argument("default_weight: fan_in must be positive for shape " +
                                shape_str(shape));
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return uniform_tensor(shape, -bound, bound, gen);
}

}  // namespace ckpt
