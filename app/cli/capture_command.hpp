#pragma once

// `ckptlab-cli capture-ops` and `ckptlab-cli capture-script DIR`: the ATen ops a capture may
// contain, and a copy of ckptlab_capture.py (compiled in) for a user's own Python environment.

#include <string>
#include <vector>

namespace ckpt::cli {

int cmd_capture_ops(const std::vector<std::string>& args);
int cmd_capture_script(const std::vector<std::string>& args);

// The text of resources/python/ckptlab_capture.py (capture_script.cpp, made by CMake).
extern const char* const kCaptureScript;

}  // namespace ckpt::cli
