#pragma once

// The app's colours (resources/palette.json): one hue per memory category and per activation
// state, shared by the graph, the plot, the legends and the CLI's exported plots.

#include <QColor>
#include <array>

#include "engine/trace/rank_timeline.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt::ui {

inline constexpr std::size_t kActivationStateCount = 6;

struct Palette {
  bool isDark = false;
  QColor background, surface, text, mutedText, grid, edge, ghost, cursor, recomputeShade,
      checkpointMark, highlight, forwardBand, backwardBand, warning, error;
  std::array<QColor, kMemoryCategoryCount> categories;
  std::array<QColor, kActivationStateCount> states;
  std::array<QColor, kFsdpCategoryCount> rankCategories;  // one FSDP2 rank's bands

  QColor rankCategory(FsdpCategory c) const { return rankCategories[static_cast<std::size_t>(c)]; }

  QColor category(MemoryCategory c) const { return categories[static_cast<std::size_t>(c)]; }
  QColor state(ActivationState s) const { return states[static_cast<std::size_t>(s)]; }
  // Text colour readable on a node of state `s`.
  QColor stateText(ActivationState s) const;

  static Palette light();
  static Palette dark();
  // The palette matching the current QApplication palette's window colour.
  static Palette forApplication();
};

// Human names for legends ("checkpoint input", "RNG state").
QString categoryLabel(MemoryCategory c);
QString stateLabel(ActivationState s);
QString rankCategoryLabel(FsdpCategory c);

}  // namespace ckpt::ui
