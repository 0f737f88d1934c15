// MainWindow: the run's lessons over the graph. A banner above it for the worst warning or
// error (with a link to its step and the fix), and a callout at its foot for the lessons at the
// cursor's step.

#include <QEvent>
#include <QLabel>

#include "ui/app/main_window.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/player/player.hpp"

namespace ckpt::ui {

void MainWindow::updateBanner() {
  auto snap = session_->current();
  const Lesson* worst = nullptr;
  if (snap)
    for (const Lesson& l : snap->lessons)
      if (l.severity != Severity::info && (!worst || l.severity > worst->severity)) worst = &l;
  if (!worst) {
    banner_->hide();
    return;
  }
  const Palette pal = Palette::forApplication();
  const bool error = worst->severity == Severity::error;
  const QColor c = error ? pal.error : pal.warning;
  QColor bg = c;
  bg.setAlphaF(0.14);
  banner_->setStyleSheet(QStringLiteral("QLabel#banner { background: rgba(%1,%2,%3,%4); color: %5;"
                                        " border-bottom: 2px solid %6; padding: 6px 10px; }")
                             .arg(bg.red())
                             .arg(bg.green())
                             .arg(bg.blue())
                             .arg(bg.alphaF())
                             .arg(pal.text.name(), c.name()));
  QString text = QStringLiteral("<b style='color:%1'>%2</b> %3")
                     .arg(c.name(), error ? tr("Error:") : tr("Warning:"),
                          QString::fromStdString(worst->title).toHtmlEscaped());
  if (worst->step >= 0)
    text += QStringLiteral(" &nbsp;<a href='step:%1'>step %1 ▸</a>").arg(worst->step);
  if (const RunSummary& s = snap->summary; !s.ok && !s.failure.fix.empty())
    text += QStringLiteral("<br><b>%1</b> %2")
                .arg(tr("Fix:"), QString::fromStdString(s.failure.fix).toHtmlEscaped());
  banner_->setText(text);
  banner_->setToolTip(QString::fromStdString(worst->text));
  banner_->show();
}

// Lessons at the cursor's step are shown over the graph, where they happen.
void MainWindow::updateCallout() {
  auto snap = session_->current();
  QStringList parts;
  if (snap)
    for (const Lesson& l : snap->lessons)
      if (lesson_at(l, player_->cursor())) {
        QString part =
            QStringLiteral("<b>%1</b>").arg(QString::fromStdString(l.title).toHtmlEscaped());
        if (l.text != l.title)
          part += QStringLiteral("<br>") + QString::fromStdString(l.text).toHtmlEscaped();
        parts << part;
      }
  if (parts.isEmpty()) {
    callout_->hide();
    return;
  }
  const Palette pal = Palette::forApplication();
  callout_->setStyleSheet(QStringLiteral("QLabel#callout { background: %1; color: %2; border: 1px "
                                         "solid %3; border-left: 4px solid %3; border-radius: 4px;"
                                         " padding: 6px 10px; }")
                              .arg(pal.surface.name(), pal.text.name(), pal.recomputeShade.name()));
  callout_->setText(parts.join(QStringLiteral("<hr>")));
  const int w = std::min(graph_->width() - 24, 560);
  callout_->setFixedWidth(std::max(200, w));
  callout_->adjustSize();
  callout_->move(12, graph_->height() - callout_->height() - 12);
  callout_->raise();
  callout_->show();
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == graph_ && event->type() == QEvent::Resize && callout_->isVisible())
    callout_->move(12, graph_->height() - callout_->height() - 12);
  return QMainWindow::eventFilter(watched, event);
}

}  // namespace ckpt::ui
