#include "engine/ops/schema/parameter_init.hpp"

#include <algorithm>
#include <cmath>

#include "engine/tensor/init.hpp"

namespace ckpt {

namespace {

std::int64_t own_fan_in(const Shape& shape) {
  if (shape.size() < 2 || shape[0] == 0) return std::max<std::int64_t>(1, shape_numel(shape));
  return shape_numel(shape) / shape[0];
}

InitKind resolved(const ParameterInit& init, const Shape& shape) {
  if (init.kind != InitKind::by_shape) return init.kind;
  return shape.size() >= 2 ? InitKind::weight : InitKind::ones;
}

std::int64_t fan_in_of(const ParameterInit& init, const Shape& shape) {
  return init.fan_in > 0 ? init.fan_in : own_fan_in(shape);
}

}  // namespace

std::string describe(const ParameterInit& init, const Shape& shape) {
  const std::string fan = std::to_string(fan_in_of(init, shape));
  std::string what;
  switch (resolved(init, shape)) {
    case InitKind::weight:
      what = "kaiming_uniform(a=√5), fan_in " + fan;
      break;
    case InitKind::bias:
      what = "uniform(±1/√" + fan + ")";
      break;
    case InitKind::ones:
      what = "ones";
      break;
    case InitKind::zeros:
      what = "zeros";
      break;
    case InitKind::normal:
      what = "normal(0, 1)";
      break;
    case InitKind::by_shape:
      break;
  }
  return what + (init.layer.empty() ? " (by its shape: no layer says)" : " (" + init.layer + ")");
}

Tensor make_parameter(const ParameterInit& init, const Shape& shape, Generator& gen) {
  switch (resolved(init, shape)) {
    case InitKind::weight:
      return default_weight(shape, fan_in_of(init, shape), gen);
    case InitKind::bias: {
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in_of(init, shape)));
      return uniform_tensor(shape, -bound, bound, gen);
    }
    case InitKind::ones:
      return Tensor::ones(shape);
    case InitKind::zeros:
      return Tensor::zeros(shape);
    case InitKind::normal:
      return normal_tensor(shape, 0.0, 1.0, gen);
    case InitKind::by_shape:
      break;
  }
  return Tensor::zeros(shape);
}

std::uint64_t parameter_seed(std::uint64_t seed, const std::string& name) {
  // FNV-1a of the name, mixed into the parameters' stream: stable across builds.
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return stream_seed(seed, Stream::parameters) ^ h;
}

}  // namespace ckpt
