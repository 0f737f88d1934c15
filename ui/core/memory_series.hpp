#pragma once

// What the plot draws of a run's memory series (engine/report/memory_series.hpp): columns of
// a decimated series, and bytes as text. Qt-free.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/report/memory_series.hpp"

namespace ckpt::ui {

// One pixel column of a decimated series: the extremes of the steps it covers, and the
// breakdown at the step with the largest total (so a peak never disappears when zoomed out).
struct PlotColumn {
  std::int64_t firstStep = 0;
  std::int64_t lastStep = 0;  // inclusive
  std::int64_t minTotal = 0;
  std::int64_t maxTotal = 0;
  std::int64_t maxStep = 0;
  CategoryBytes atMax{};
};

// Splits steps [begin, end) into at most `columns` columns of equal step width (one column
// per step when there are fewer steps than columns).
std::vector<PlotColumn> decimate(const MemorySeries& series, std::int64_t begin, std::int64_t end,
                                 int columns);

// "12.40 MiB", "812.0 KiB", "96 B": the CLI's format_bytes, so both print the same figures.
std::string formatBytes(std::int64_t bytes);

}  // namespace ckpt::ui
