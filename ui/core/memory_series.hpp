#pragma once

// A run's memory over steps as plain arrays, taken once from a Trace (off the UI thread) so
// that the plot, the CLI's --plot and the tests draw from the same numbers. Qt-free.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/trace/trace.hpp"

namespace ckpt::ui {

struct SeriesSpan {
  std::int64_t begin = 0;  // first step
  std::int64_t end = 0;    // one past the last
  std::string label;
};

struct MemorySeries {
  std::vector<CategoryBytes> bytes;  // live bytes by category after step k
  std::vector<std::int64_t> totals;  // sum of bytes[k]
  std::vector<Phase> phases;         // phase of step k
  std::vector<SeriesSpan> recomputes;
  std::int64_t forwardEnd = -1;  // last forward step
  bool failed = false;           // the run stopped with an error (the curve ends there)
  bool warned = false;           // the run warned (a saving may come from missing gradients)
  // A dry run's curve (exact bytes, estimated times); with notComputed set, the real run was
  // not started and that says why (the memory guard).
  bool dryRun = false;
  std::string notComputed;
  std::int64_t peakBytes = 0;
  std::int64_t peakStep = -1;
  CategoryBytes peakByCategory{};
  CategoryBytes maxByCategory{};  // over all steps, to know which categories ever appear

  std::int64_t steps() const { return static_cast<std::int64_t>(totals.size()); }
  bool empty() const { return totals.empty(); }
  std::int64_t maxTotal() const { return peakBytes; }
};
using MemorySeriesPtr = std::shared_ptr<const MemorySeries>;

// Peak and its breakdown are the trace's own (Trace::peak()), not recomputed here.
MemorySeries memorySeriesFromTrace(const Trace& trace);

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
