#pragma once

// A request in a few words, for the ghost's legend and the summary
// ("features.denseblock1 + 2 more, reentrant"); on CUDA it says whose memory semantics, and
// PyTorch 2.x's early stop where it applies ("h.* + 11 more, non-reentrant, PyTorch 2.x on an
// NVIDIA GPU (CUDA), early stop (2.x's default)").

#include <string>

#include "engine/run/run_request.hpp"

namespace ckpt {

std::string describe_request(const RunRequest& request);

}  // namespace ckpt
