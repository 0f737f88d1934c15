#include "ui/app/window_layout.hpp"

#include <QCoreApplication>
#include <algorithm>

namespace ckpt::ui {

namespace {
// Room left around a first window for a desktop's panels and the window frame.
constexpr double kScreenMarginShare = 0.95;
constexpr double kLeftShare = 300.0 / 1440.0;
constexpr double kRightShare = 380.0 / 1440.0;
// The module tree shows a name three levels deep ("denselayer1"), its type and op count whole
// from this width; the left column starts no narrower, even on a small screen.
constexpr int kModuleTreeWidth = 300;
}  // namespace

QRect defaultWindowGeometry(const QRect& available) {
  if (!available.isValid()) return QRect(QPoint(0, 0), kDefaultWindowSize);
  const int w = std::min(kDefaultWindowSize.width(),
                         static_cast<int>(available.width() * kScreenMarginShare));
  const int h = std::min(kDefaultWindowSize.height(),
                         static_cast<int>(available.height() * kScreenMarginShare));
  QRect r(0, 0, w, h);
  r.moveCenter(available.center());
  return r;
}

QString geometryProblem(const QSize& size, const QRect& available) {
  if (!available.isValid()) return {};
  if (!size.isValid() || size.isEmpty())
    return QCoreApplication::translate("WindowLayout", "no saved window size");
  if (size.width() > available.width() || size.height() > available.height())
    return QCoreApplication::translate("WindowLayout", "%1x%2 is larger than the screen (%3x%4)")
        .arg(size.width())
        .arg(size.height())
        .arg(available.width())
        .arg(available.height());
  const double area = static_cast<double>(size.width()) * size.height();
  if (area < kTinyScreenShare * kTinyScreenShare * available.width() * available.height())
    return QCoreApplication::translate("WindowLayout", "%1x%2 is tiny on a %3x%4 screen")
        .arg(size.width())
        .arg(size.height())
        .arg(available.width())
        .arg(available.height());
  return {};
}

SideDockWidths defaultSideDockWidths(int windowWidth) {
  return {std::max(kModuleTreeWidth, static_cast<int>(windowWidth * kLeftShare)),
          std::max(kMinSideDockWidth, static_cast<int>(windowWidth * kRightShare))};
}

}  // namespace ckpt::ui
