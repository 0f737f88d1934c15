#pragma once

// A configuration in a few words, for the ghost's legend and the summary
// ("features.denseblock1 + 2 more, reentrant"). Qt-free.

#include <string>

#include "engine/run/runner.hpp"

namespace ckpt::ui {

std::string describeConfig(const CheckpointConfig& config);

}  // namespace ckpt::ui
