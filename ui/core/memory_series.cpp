#include "ui/core/memory_series.hpp"

#include "engine/report/run_summary.hpp"

#include <algorithm>
#include <stdexcept>

namespace ckpt::ui {

std::vector<PlotColumn> decimate(const MemorySeries& series, std::int64_t begin, std::int64_t end,
                                 int columns) {
  begin = std::max<std::int64_t>(0, begin);
  end = std::min(end, series.steps());
  std::vector<PlotColumn> out;
  if (end <= begin || columns <= 0) return out;
  const std::int64_t n = end - begin;
  const std::int64_t cols = std::min<std::int64_t>(n, columns);
  out.resize(static_cast<std::size_t>(cols));
  for (std::int64_t c = 0; c < cols; ++c) {
    // Integer bounds so that every step lands in exactly one column.
    const std::int64_t first = begin + n * c / cols;
    const std::int64_t last = begin + n * (c + 1) / cols - 1;
    PlotColumn& col = out[static_cast<std::size_t>(c)];
    col.firstStep = first;
    col.lastStep = last;
    col.minTotal = series.totals[static_cast<std::size_t>(first)];
    col.maxTotal = col.minTotal;
    col.maxStep = first;
    for (std::int64_t k = first + 1; k <= last; ++k) {
      const std::int64_t t = series.totals[static_cast<std::size_t>(k)];
      if (t > col.maxTotal) {
        col.maxTotal = t;
        col.maxStep = k;
      }
      col.minTotal = std::min(col.minTotal, t);
    }
    col.atMax = series.bytes[static_cast<std::size_t>(col.maxStep)];
  }
  return out;
}

std::string formatBytes(std::int64_t bytes) {
  return format_bytes(bytes);
}

}  // namespace ckpt::ui
