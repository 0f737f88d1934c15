#pragma once

// `ckptlab-cli modules`, `compare` and `code`: the model's tree, configurations side by side,
// and the PyTorch code of one.

#include <string>
#include <vector>

namespace ckpt::cli {

int cmd_modules(const std::vector<std::string>& args);
int cmd_compare(int argc, char** argv, const std::vector<std::string>& args);
int cmd_code(const std::vector<std::string>& args);

}  // namespace ckpt::cli
