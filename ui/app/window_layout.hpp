#pragma once

// What a first window looks like on a given screen, and when a restored one does not suit it.
// Pure decisions on rectangles, so that a test can ask them for any screen size.

#include <QRect>
#include <QString>

namespace ckpt::ui {

// Narrower than this, a side dock cuts module names to a few letters, sets the Notes one word
// per line and wraps the Run summary's figures letter by letter (seen at 60-120 px).
inline constexpr int kMinSideDockWidth = 240;
// The size a first start opens at when the screen has room for it.
inline constexpr QSize kDefaultWindowSize{1440, 900};
// A restored window with less area than this share of the screen's in both directions is tiny
// (a window's minimum width keeps it from being small in width alone); a half-screen tile, with
// half the area, was sized on purpose and is left alone.
inline constexpr double kTinyScreenShare = 0.6;

// The default window geometry on a screen whose available area is `available`: 1440x900
// centred where it fits, else nearly the whole screen (the docks stay readable either way).
QRect defaultWindowGeometry(const QRect& available);

// Why a restored window of `size` does not suit a screen with `available` room, or an empty
// string when it does.
QString geometryProblem(const QSize& size, const QRect& available);

// The default widths of the left (Modules, Notes) and right (Run summary, Inspector, ...) dock
// columns in a window `windowWidth` wide: the same shares as 300 and 380 px at 1440, the left
// never under 300 px, the right never under kMinSideDockWidth.
struct SideDockWidths {
  int left = 0;
  int right = 0;
};
SideDockWidths defaultSideDockWidths(int windowWidth);

}  // namespace ckpt::ui
