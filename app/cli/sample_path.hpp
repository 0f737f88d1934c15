#pragma once

// `ckptlab-cli run densenet_block`: a MODEL argument that names no file but a sample.

#include <string>

namespace ckpt::cli {

// `arg` itself when it is a file or a path; else the sample of that name (with or without
// .json/.onnx) installed beside the executable (../share/ckptlab/samples), or, for an
// executable in the build tree, in the source tree's samples/. Throws std::runtime_error
// naming the folders searched when there is none.
std::string resolve_model_path(const std::string& arg);

}  // namespace ckpt::cli
