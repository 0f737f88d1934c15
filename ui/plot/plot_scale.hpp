#pragma once

// What the memory plot renderer's files share (memory_plot_renderer.cpp, memory_plot_axes.cpp,
// memory_plot_stack.cpp, memory_plot_annotations.cpp): the stacking order of the categories,
// the heights of the rows above the plot area, and the byte units and tick spacing of the axes.
// Internal to the renderer; no other code includes it.

#include <QString>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "ui/core/memory_series.hpp"

namespace ckpt::ui::plot_scale {

// Bottom to top: what lives all run long first, the spiky temporaries last.
inline constexpr std::array<MemoryCategory, kMemoryCategoryCount> kStackOrder = {
    MemoryCategory::workspace,  MemoryCategory::parameter,  MemoryCategory::optimizer_state,
    MemoryCategory::input,      MemoryCategory::rng_state,  MemoryCategory::checkpoint_input,
    MemoryCategory::activation, MemoryCategory::recomputed, MemoryCategory::gradient,
    MemoryCategory::temporary};

// One FSDP2 rank's bands, bottom to top: the shards that live all step long, then what is
// gathered, the run's own bytes, and the gradients' transient buffers.
inline constexpr std::array<FsdpCategory, kFsdpCategoryCount> kRankStackOrder = {
    FsdpCategory::sharded_parameters,  FsdpCategory::optimizer_state,
    FsdpCategory::sharded_gradients,   FsdpCategory::unsharded_parameters,
    FsdpCategory::all_gather_buffers,  FsdpCategory::activations,
    FsdpCategory::unsharded_gradients, FsdpCategory::reduce_scatter};

inline constexpr double kLegendHeight = 22;
inline constexpr double kTitleHeight = 20;
inline constexpr double kBottomMargin = 30;
inline constexpr double kRightMargin = 18;

inline QString bytesText(std::int64_t b) {
  return QString::fromStdString(formatBytes(b));
}

// Tick spacing of 1, 2 or 5 times a power of ten in the unit's scale.
inline double niceStep(double range, int targetTicks) {
  if (range <= 0) return 1;
  const double raw = range / std::max(1, targetTicks);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

inline double unitFor(std::int64_t maxBytes) {
  double unit = 1;
  while (static_cast<double>(maxBytes) / unit >= 1024.0 && unit < 1024.0 * 1024 * 1024 * 1024)
    unit *= 1024;
  return unit;
}

inline const char* unitName(double unit) {
  if (unit >= 1024.0 * 1024 * 1024) return "GiB";
  if (unit >= 1024.0 * 1024) return "MiB";
  if (unit >= 1024.0) return "KiB";
  return "B";
}

}  // namespace ckpt::ui::plot_scale
