#include "engine/autograd/anomaly.hpp"

#include <cmath>
#include <stdexcept>

#include "engine/autograd/execution_context.hpp"

namespace ckpt {

namespace {

template <typename T>
const char* scan(const T* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (std::isnan(p[i])) return "nan";
    if (std::isinf(p[i])) return "inf";
  }
  return "";
}

std::string ordinal(std::size_t i) {
  // PyTorch writes "0th", "1st", ... with its own suffix rule; the same here.
  const std::size_t mod100 = i % 100;
  const char* suffix = "th";
  if (mod100 < 11 || mod100 > 13) {
    if (i % 10 == 1) suffix = "st";
    if (i % 10 == 2) suffix = "nd";
    if (i % 10 == 3) suffix = "rd";
  }
  return std::to_string(i) + suffix;
}

}  // namespace

const char* non_finite_kind(const Tensor& t) {
  if (!t.defined() || t.is_meta() || t.dtype() == DType::i64) return "";
  // float32 and float64 in place; the others (bf16 losses and gradients) through a copy.
  if (t.device() == Device::cpu && t.is_contiguous()) {
    if (t.dtype() == DType::f32) return scan(t.data<float>(), t.numel());
    if (t.dtype() == DType::f64) return scan(t.data<double>(), t.numel());
  }
  const std::vector<double> values = t.to_vector();
  return scan(values.data(), static_cast<std::int64_t>(values.size()));
}

void check_anomaly(const TensorList& outputs, std::string_view function, std::string_view where) {
  const auto context = ExecutionContext::current();
  if (!context->detect_anomaly()) return;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string kind = non_finite_kind(outputs[i]);
    if (kind.empty()) continue;
    std::string msg = "Function '" + std::string(function) + "' returned " + kind +
                      " values in its " + ordinal(i) + " output (" + phase_name(context->phase());
    if (!where.empty()) msg += " of '" + std::string(where) + "'";
    throw std::runtime_error(msg + "; anomaly detection is on).");
  }
}

}  // namespace ckpt
