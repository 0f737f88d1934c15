#pragma once

// Loading models: the native JSON format (samples/README.md) and ONNX. Both produce the same
// Model (ops, parameters, module tree, scenario). Every error is a std::invalid_argument (or
// std::runtime_error for I/O) whose message starts with the file name.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace ckpt {

// What the user says about a model that its file does not.
struct LoadOptions {
  // Parameters to take as not trainable (--frozen, the app's "Freeze"): names or module paths,
  // globs whose `*` is one path segment (engine/model/load_notes.hpp).
  std::vector<std::string> frozen;
};

// A .json, .capture.json (engine/model/capture_loader.hpp) or .onnx file, told apart by
// content (not by extension).
std::shared_ptr<Model> load_model(const std::string& path, const LoadOptions& options = {});
// A native model from text (embedded samples); `source` names it in errors and Model::source.
std::shared_ptr<Model> load_model_json_text(const std::string& text, const std::string& source,
                                            const LoadOptions& options = {});
// An ONNX model from its serialized bytes; `source` names it in errors. Graph inputs named in
// `bind` are not inputs of the model but constants with those values, known at load time (the
// ONNX backend tests pass shapes, axes and bounds as inputs; exporters make them constants).
// A symbolic (dynamic) batch dimension is loaded at `batch` (0: 1).
std::shared_ptr<Model> load_model_onnx_bytes(const std::string& bytes, const std::string& source,
                                             const std::map<std::string, Tensor>& bind = {},
                                             std::int64_t batch = 0,
                                             const LoadOptions& options = {});
// An ONNX model read from the file `path` (its bytes given); loading it at another batch reads
// the file again through `read_again` instead of keeping the bytes.
std::shared_ptr<Model> load_model_onnx_file(const std::string& bytes, const std::string& path,
                                            std::function<std::string()> read_again,
                                            const LoadOptions& options = {});
// ONNX op types the importer understands (sorted).
std::vector<std::string> supported_onnx_ops();

}  // namespace ckpt
