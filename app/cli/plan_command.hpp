#pragma once

// `ckptlab-cli plan MODEL --budget B [--strategy S] [--json] [--plot frontier.svg]`.

#include <string>
#include <vector>

namespace ckpt::cli {

int cmd_plan(const std::vector<std::string>& args);

}  // namespace ckpt::cli
