#include "ui/panels/tour_view.hpp"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QVBoxLayout>

#include "ui/tours/tour_runner.hpp"

namespace ckpt::ui {

TourView::TourView(TourRunner* runner, QWidget* parent) : QWidget(parent), runner_(runner) {
  title_ = new QLabel(this);
  title_->setWordWrap(true);
  question_ = new QLabel(this);
  question_->setWordWrap(true);
  progress_ = new QLabel(this);
  caption_ = new QLabel(this);
  caption_->setWordWrap(true);
  caption_->setTextFormat(Qt::RichText);
  caption_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(caption_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);

  back_ = new QPushButton(tr("&Back"), this);
  next_ = new QPushButton(tr("&Next"), this);
  close_ = new QPushButton(tr("End lesson"), this);
  large_ = new QCheckBox(tr("&Large text"), this);
  next_->setDefault(true);
  back_->setToolTip(tr("The previous step (Alt+B, Page Up)"));
  next_->setToolTip(tr("Do this step's click for you (Alt+N, Page Down)"));

  // Two rows: one would make the dock, and so the window, wider than a 240 px side column.
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(back_);
  buttons->addWidget(next_);
  buttons->addStretch();
  auto* options = new QHBoxLayout;
  options->addWidget(large_);
  options->addStretch();
  options->addWidget(close_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(question_);
  layout->addWidget(progress_);
  layout->addWidget(scroll, 1);
  layout->addLayout(buttons);
  layout->addLayout(options);

  // A presenter's clicker sends Page Down / Page Up.
  auto* forward = new QShortcut(QKeySequence(Qt::Key_PageDown), this);
  forward->setContext(Qt::WindowShortcut);
  auto* backward = new QShortcut(QKeySequence(Qt::Key_PageUp), this);
  backward->setContext(Qt::WindowShortcut);
  connect(forward, &QShortcut::activated, runner_, &TourRunner::next);
  connect(backward, &QShortcut::activated, runner_, &TourRunner::back);
  connect(next_, &QPushButton::clicked, runner_, &TourRunner::next);
  connect(back_, &QPushButton::clicked, runner_, &TourRunner::back);
  connect(close_, &QPushButton::clicked, this, &TourView::closeRequested);
  connect(large_, &QCheckBox::toggled, this, &TourView::applyFont);
  connect(runner_, &TourRunner::changed, this, &TourView::refresh);
  applyFont();
  refresh();
}

void TourView::setLargeText(bool large) {
  large_->setChecked(large);
}

bool TourView::largeText() const {
  return large_->isChecked();
}

QString TourView::captionText() const {
  return caption_->text();
}

// Large text is for the caption, which a class reads from the back of the room; the title and
// the question grow less, so that the caption keeps most of the dock.
void TourView::applyFont() {
  const qreal base = font().pointSizeF() > 0 ? font().pointSizeF() : 10.0;
  const bool large = large_->isChecked();
  QFont text = font();
  text.setPointSizeF(base * (large ? 1.8 : 1.1));
  caption_->setFont(text);
  QFont question = font();
  question.setItalic(true);
  question.setPointSizeF(base * (large ? 1.3 : 1.0));
  question_->setFont(question);
  QFont title = font();
  title.setBold(true);
  title.setPointSizeF(base * (large ? 1.4 : 1.15));
  title_->setFont(title);
}

void TourView::refresh() {
  const Tour* tour = runner_->tour();
  if (!tour) {
    title_->setText(tr("No lesson running"));
    question_->setText(tr("Help ▸ Lessons starts one."));
    progress_->clear();
    caption_->clear();
    back_->setEnabled(false);
    next_->setEnabled(false);
    return;
  }
  title_->setText(tour->title);
  question_->setText(tour->question.isEmpty() ? QString()
                                              : QStringLiteral("“%1”").arg(tour->question));
  progress_->setText(tr("Step %1 of %2%3")
                         .arg(runner_->stepIndex() + 1)
                         .arg(runner_->stepCount())
                         .arg(runner_->settled()    ? QString()
                              : runner_->deviated() ? tr(" · you changed the settings: Next or "
                                                         "Back returns to the lesson")
                                                    : tr(" · running…")));
  caption_->setText(runner_->caption());
  back_->setEnabled(runner_->canGoBack());
  next_->setEnabled(runner_->canGoNext());
  next_->setText(runner_->canGoNext() ? tr("&Next") : tr("(last step)"));
}

}  // namespace ckpt::ui
