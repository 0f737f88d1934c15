#pragma once

// The graph's legend: what each node colour and mark means. Drawn over the view's corner.

#include <QWidget>

#include "ui/style/palette.hpp"

namespace ckpt::ui {

class StateLegend : public QWidget {
  Q_OBJECT

 public:
  explicit StateLegend(QWidget* parent = nullptr);
  void setLegendPalette(const Palette& palette);
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  Palette palette_;
};

}  // namespace ckpt::ui
