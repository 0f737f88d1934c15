#pragma once

// The memory plot widget: MemoryPlotRenderer's picture, cached (the cursor is drawn over the
// cache, so stepping costs one line), a hover read-out, and click or drag to move the cursor.

#include <QPixmap>
#include <QWidget>

#include "ui/plot/memory_plot_renderer.hpp"

namespace ckpt::ui {

class MemoryPlot : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryPlot(QWidget* parent = nullptr);

  void setSeries(MemorySeriesPtr series, MemorySeriesPtr ghost, const QString& ghostLabel);
  // The visible pinned runs (only those: a hidden pin is not in the model).
  void setPins(std::vector<PlotPin> pins);
  // A measured snapshot: over the run, or (alone) its own allocated and reserved bytes.
  void setMeasured(MeasuredPlotPtr measured, bool alone);
  void setCursorStep(std::int64_t step);
  // Names a step for the peak label and the hover read-out ("conv2d · features.conv0").
  void setStepLabel(std::function<QString(std::int64_t)> label);
  void setPlotPalette(const Palette& palette);
  const MemoryPlotModel& model() const { return model_; }
  const MemoryPlotRenderer& renderer() const { return renderer_; }
  bool exportImage(const QString& path, QString* error = nullptr) const;
  // The text shown when hovering step k.
  QString describeStep(std::int64_t step) const;

  QSize sizeHint() const override { return {900, 260}; }
  QSize minimumSizeHint() const override { return {240, 140}; }

 signals:
  void stepClicked(std::int64_t step);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  void invalidate();

  MemoryPlotRenderer renderer_;
  MemoryPlotModel model_;
  QPixmap cache_;
  bool cacheValid_ = false;
  std::int64_t hover_ = -1;
};

}  // namespace ckpt::ui
