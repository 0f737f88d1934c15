#pragma once

// A configuration in a few words, for the ghost's legend and the summary
// ("features.denseblock1 + 2 more, reentrant").

#include <string>

#include "engine/run/runner.hpp"

namespace ckpt {

std::string describe_config(const CheckpointConfig& config);

}  // namespace ckpt
