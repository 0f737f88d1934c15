#pragma once

// Which initializers a model trains: what a file says (BatchNorm's running statistics by the
// op, the buffers the project's exporters name in an ONNX file's metadata), what the user says
// (--frozen, the app's "Freeze"), and the load summary that lists the outcome.

#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace ckpt {

// The ONNX metadata_props key under which samples/export_onnx.py writes, as a JSON array of
// initializer names, the registered buffers (model.named_buffers()) and the parameters with
// requires_grad=False of the exported module: ONNX itself does not tell them from weights.
inline constexpr const char* kOnnxBuffersKey = "ckptlab.buffers";

// Whether `pattern` names the parameter `name`: the name itself or a module path above it
// ("rotary" names rotary.cos), each as a glob whose `*` is one path segment ('layers.*.attn',
// '*_cached'), as --checkpoint's patterns are.
bool frozen_pattern_matches(const std::string& pattern, const std::string& name);

// Makes each parameter a pattern names untrainable (requires_grad false), noting why in the
// model's load notes. A pattern that names no parameter is an error naming the file.
void freeze_parameters(Model& model, const std::vector<std::string>& patterns);

// The load summary: the trainable initializers, those taken as not trainable and why, and the
// loader's warnings; one line each, for the CLI's stderr and the app's Notes. `all` lists every
// trainable name; otherwise a long list is cut after a few.
std::vector<std::string> load_summary_lines(const Model& model, bool all = false);

}  // namespace ckpt
