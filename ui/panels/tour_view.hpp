#pragma once

// The Lesson dock: a guided lesson's question, its step's caption (figures from the engine's
// run), and Back / Next, which perform the step: open the sample, tick modules, switch the
// variant, move the cursor. Keyboard only works (Alt+N / Alt+B, or a presenter's Page Down /
// Page Up), and Large text is for a projector. It asks the TourRunner what to show.

#include <QWidget>

class QCheckBox;
class QLabel;
class QPushButton;

namespace ckpt::ui {

class TourRunner;

class TourView : public QWidget {
  Q_OBJECT

 public:
  explicit TourView(TourRunner* runner, QWidget* parent = nullptr);
  void setLargeText(bool large);
  bool largeText() const;
  QPushButton* nextButton() const { return next_; }
  QPushButton* backButton() const { return back_; }
  QString captionText() const;

 signals:
  void closeRequested();

 private:
  void refresh();
  void applyFont();

  TourRunner* runner_;
  QLabel* title_;
  QLabel* question_;
  QLabel* progress_;
  QLabel* caption_;
  QPushButton* back_;
  QPushButton* next_;
  QPushButton* close_;
  QCheckBox* large_;
};

}  // namespace ckpt::ui
