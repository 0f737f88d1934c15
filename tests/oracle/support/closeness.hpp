#pragma once

// How close the engine's tensor is to PyTorch's, for the ONNX oracles (test_oracle_onnx,
// test_oracle_fusion).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "engine/model/model.hpp"
#include "engine/tensor/npy.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt::oracle {

// max |a - b| / (atol + rtol * |b|) over the elements; <= 1 passes.
inline double worst(const Tensor& ours, const Tensor& theirs, double atol, double rtol) {
  const auto a = ours.to_vector(), b = theirs.to_vector();
  if (a.size() != b.size()) return INFINITY;
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    w = std::max(w, std::abs(a[i] - b[i]) / (atol + rtol * std::abs(b[i])));
  return w;
}

// Every trainable parameter's gradient against PyTorch's (dir/grad__<name>.npy): "" when all
// pass, else what differs first. At least one gradient must be compared.
inline std::string gradient_differences(const Model& model,
                                        const std::map<std::string, Tensor>& gradients,
                                        const std::string& dir, double atol, double rtol) {
  int compared = 0;
  for (const auto& p : model.parameters) {
    if (p.is_buffer) continue;
    const std::string f = dir + "/grad__" + p.name + ".npy";
    if (!std::filesystem::exists(f)) return "no PyTorch gradient for " + p.name;
    const auto ours = gradients.find(p.name);
    if (ours == gradients.end()) return "no gradient for " + p.name;
    if (const double g = worst(ours->second, load_npy(f), atol, rtol); g > 1)
      return "gradient of " + p.name + " differs (" + std::to_string(g) + ")";
    ++compared;
  }
  return compared > 0 ? "" : "no gradient compared";
}

}  // namespace ckpt::oracle
