#include "ui/plot/memory_plot.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

namespace ckpt::ui {

MemoryPlot::MemoryPlot(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setPlotPalette(Palette::forApplication());
  setToolTipDuration(-1);
}

void MemoryPlot::invalidate() {
  cacheValid_ = false;
  update();
}

void MemoryPlot::setSeries(MemorySeriesPtr series, MemorySeriesPtr ghost,
                           const QString& ghostLabel) {
  model_.series = std::move(series);
  model_.ghost = std::move(ghost);
  model_.ghostLabel = ghostLabel;
  invalidate();
}

void MemoryPlot::setPins(std::vector<PlotPin> pins) {
  model_.pins = std::move(pins);
  invalidate();
}

void MemoryPlot::setMeasured(MeasuredPlotPtr measured, bool alone) {
  model_.measured = std::move(measured);
  model_.measuredAlone = alone && model_.measured;
  invalidate();
}

void MemoryPlot::setCursorStep(std::int64_t step) {
  if (model_.cursor == step) return;
  model_.cursor = step;
  update();
}

void MemoryPlot::setStepLabel(std::function<QString(std::int64_t)> label) {
  model_.stepLabel = std::move(label);
  invalidate();
}

void MemoryPlot::setPlotPalette(const Palette& palette) {
  renderer_.setPalette(palette);
  QFont f = font();
  f.setPointSizeF(std::max(8.0, f.pointSizeF() * 0.92));
  renderer_.setFont(f);
  invalidate();
}

bool MemoryPlot::exportImage(const QString& path, QString* error) const {
  MemoryPlotModel m = model_;
  m.title = tr("Memory over steps");
  return exportMemoryPlot(path, m, QSize(std::max(width(), 1000), std::max(height(), 380)),
                          renderer_.palette(), error);
}

void MemoryPlot::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  cacheValid_ = false;
}

void MemoryPlot::paintEvent(QPaintEvent*) {
  const qreal dpr = devicePixelRatioF();
  if (!cacheValid_ || cache_.size() != size() * dpr) {
    cache_ = QPixmap(size() * dpr);
    cache_.setDevicePixelRatio(dpr);
    QPainter cp(&cache_);
    renderer_.renderStatic(cp, QRectF(rect()), model_);
    cacheValid_ = true;
  }
  QPainter p(this);
  p.drawPixmap(0, 0, cache_);
  renderer_.renderHover(p, QRectF(rect()), model_, hover_);
  renderer_.renderCursor(p, QRectF(rect()), model_);
}

QString MemoryPlot::describeStep(std::int64_t k) const {
  if (!model_.series || k < 0 || k >= model_.series->steps()) return {};
  const MemorySeries& s = *model_.series;
  const auto i = static_cast<std::size_t>(k);
  QString text = tr("<b>step %1</b> · %2").arg(k).arg(QLatin1String(phase_name(s.phases[i])));
  if (model_.stepLabel) {
    const QString what = model_.stepLabel(k);
    if (!what.isEmpty()) text += QStringLiteral("<br>") + what.toHtmlEscaped();
  }
  text += tr("<br><b>%1</b> live (high-water of the step)")
              .arg(QString::fromStdString(formatBytes(s.totals[i])));
  if (s.per_rank) {
    text += tr("<br>one rank of %1 (FSDP2, modelled):").arg(s.per_rank->ranks);
    const FsdpBytes& b = s.per_rank->by_step[i];
    for (std::size_t c = 0; c < kFsdpCategoryCount; ++c)
      if (b[c] != 0)
        text += QStringLiteral("<br><span style='color:%1'>■</span> %2: %3")
                    .arg(renderer_.palette().rankCategories[c].name(),
                         rankCategoryLabel(static_cast<FsdpCategory>(c)),
                         QString::fromStdString(formatBytes(b[c])));
  }
  for (std::size_t c = 0; c < kMemoryCategoryCount && !s.per_rank; ++c) {
    if (s.bytes[i][c] == 0) continue;
    text += QStringLiteral("<br><span style='color:%1'>■</span> %2: %3")
                .arg(renderer_.palette().categories[c].name(),
                     categoryLabel(static_cast<MemoryCategory>(c)),
                     QString::fromStdString(formatBytes(s.bytes[i][c])));
  }
  if (model_.ghost && k < model_.ghost->steps())
    text += tr("<br>previous configuration: %1")
                .arg(QString::fromStdString(formatBytes(model_.ghost->totals[i])));
  for (const PlotPin& pin : model_.pins)
    if (pin.series && k < pin.series->steps())
      text += QStringLiteral("<br><span style='color:%1'>◆</span> %2: %3")
                  .arg(pin.colour.name(), pin.name.toHtmlEscaped(),
                       QString::fromStdString(formatBytes(pin.series->totals[i])));
  return text;
}

void MemoryPlot::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const std::int64_t k = renderer_.stepAt(event->position().x(), QRectF(rect()), model_);
  if (k >= 0 && model_.series && k < model_.series->steps()) emit stepClicked(k);
}

void MemoryPlot::mouseMoveEvent(QMouseEvent* event) {
  const std::int64_t k = renderer_.stepAt(event->position().x(), QRectF(rect()), model_);
  if (event->buttons() & Qt::LeftButton) {
    if (k >= 0 && model_.series && k < model_.series->steps()) emit stepClicked(k);
  }
  if (k != hover_) {
    hover_ = k;
    update();
    const QString text = describeStep(k);
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(event->globalPosition().toPoint(), text, this);
  }
}

void MemoryPlot::leaveEvent(QEvent* event) {
  hover_ = -1;
  QToolTip::hideText();
  update();
  QWidget::leaveEvent(event);
}

}  // namespace ckpt::ui
