#pragma once

// `ckptlab-cli snapshot FILE [--json] [--compare MODEL [run options]]`: a PyTorch memory
// snapshot's measured peak, and the engine's prediction beside it.

#include <string>
#include <vector>

namespace ckpt::cli {

int cmd_snapshot(const std::vector<std::string>& args);

}  // namespace ckpt::cli
