#pragma once

// The frontier as an SVG file (plain text; the CLI needs no painter for it).

#include <string>
#include <vector>

#include "engine/plan/planner.hpp"

namespace ckpt::cli {

// Colour of a strategy's points, the same in the SVG and the app's Plan dock.
const char* strategy_colour(Strategy s);

// Throws std::runtime_error naming the file when it cannot be written.
void write_frontier_svg(const std::string& path, const std::string& title,
                        const std::vector<PlanPoint>& points, const std::vector<PlanPoint>& front,
                        std::int64_t budget, const PlanPoint& chosen);

}  // namespace ckpt::cli
