#pragma once

// A request in a few words, for the ghost's legend and the summary
// ("features.denseblock1 + 2 more, reentrant").

#include <string>

#include "engine/run/run_request.hpp"

namespace ckpt {

std::string describe_request(const RunRequest& request);

}  // namespace ckpt
