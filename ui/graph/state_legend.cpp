#include "ui/graph/state_legend.hpp"

#include <QPainter>

namespace ckpt::ui {

namespace {
constexpr int kRow = 16;
constexpr int kRows = kActivationStateCount + 3;
}  // namespace

StateLegend::StateLegend(QWidget* parent) : QWidget(parent), palette_(Palette::light()) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  QFont f = font();
  f.setPointSizeF(std::max(7.5, f.pointSizeF() * 0.85));
  setFont(f);
  resize(sizeHint());
}

void StateLegend::setLegendPalette(const Palette& palette) {
  palette_ = palette;
  update();
}

QSize StateLegend::sizeHint() const {
  return {fontMetrics().horizontalAdvance(tr("checkpoint input")) + 44, kRows * kRow + 26};
}

void StateLegend::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, true);
  QColor bg = palette_.surface;
  bg.setAlphaF(0.92);
  p.setPen(QPen(palette_.grid, 1));
  p.setBrush(bg);
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5);
  p.setPen(palette_.mutedText);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRect(8, 4, width() - 12, 16), Qt::AlignLeft | Qt::AlignVCenter,
             tr("tensor at cursor"));
  p.setFont(font());
  int y = 22;
  auto row = [&](const QString& text, auto&& swatch) {
    swatch(QRectF(8, y + 2, 22, 11));
    p.setPen(palette_.text);
    p.drawText(QRect(36, y, width() - 40, kRow), Qt::AlignLeft | Qt::AlignVCenter, text);
    y += kRow;
  };
  for (std::size_t i = 0; i < kActivationStateCount; ++i) {
    const auto s = static_cast<ActivationState>(i);
    row(stateLabel(s), [&](const QRectF& r) {
      p.setPen(s == ActivationState::pending ? QPen(palette_.mutedText, 1, Qt::DashLine)
                                             : QPen(palette_.edge, 1));
      p.setBrush(palette_.state(s));
      p.drawRoundedRect(r, 3, 3);
    });
  }
  row(tr("op at cursor"), [&](const QRectF& r) {
    p.setPen(QPen(palette_.highlight, 2.2));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(r, 3, 3);
  });
  row(tr("checkpointed"), [&](const QRectF& r) {
    p.setPen(QPen(palette_.checkpointMark, 2, Qt::DashLine));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(r, 3, 3);
  });
  row(tr("recomputing"), [&](const QRectF& r) {
    QColor c = palette_.recomputeShade;
    c.setAlphaF(0.25);
    p.setPen(QPen(palette_.recomputeShade, 2.2));
    p.setBrush(c);
    p.drawRoundedRect(r, 3, 3);
  });
}

}  // namespace ckpt::ui
