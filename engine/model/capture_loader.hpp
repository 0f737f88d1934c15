#pragma once

// Captures: what ckptlab_capture (resources/python/ckptlab_capture.py) recorded of a PyTorch
// model's training forward, ATen op by ATen op (docs/capture_format.md), loaded into the same
// Model as the native and ONNX formats. Each ATen op is translated by its op-table row's rule
// (OpSchema::aten); an op with no rule is a load error naming it, its module and the PyTorch
// version that dispatched it.

#include <memory>
#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace ckpt {

// Whether `bytes` is a capture: a JSON object whose "format" is "ckptlab-capture" (looked for
// near the start, where ckptlab_capture writes it).
bool looks_like_capture(const std::string& bytes);
// A capture from its text; `source` names it in errors and Model::source.
std::shared_ptr<Model> load_model_capture_text(const std::string& text, const std::string& source);
// The ATen ops (qualified names, "aten::addmm") a capture may contain, sorted.
std::vector<std::string> supported_aten_ops();

}  // namespace ckpt
