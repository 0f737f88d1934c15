#include "ui/player/player_bar.hpp"

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QSlider>
#include <QToolButton>

#include "ui/player/player.hpp"

namespace ckpt::ui {

namespace {

QAction* makeAction(QWidget* owner, const QString& icon, const QString& text,
                    const QKeySequence& key) {
  auto* a = new QAction(QIcon(QStringLiteral(":/icons/%1.svg").arg(icon)), text, owner);
  a->setShortcut(key);
  a->setShortcutContext(Qt::WindowShortcut);
  a->setToolTip(QStringLiteral("%1 (%2)").arg(text, key.toString(QKeySequence::NativeText)));
  owner->addAction(a);
  return a;
}

QToolButton* button(QAction* a) {
  auto* b = new QToolButton;
  b->setDefaultAction(a);
  b->setAutoRaise(true);
  b->setIconSize(QSize(20, 20));
  return b;
}

}  // namespace

PlayerBar::PlayerBar(Player* player, QWidget* parent) : QWidget(parent), player_(player) {
  start_ = makeAction(this, QStringLiteral("to-start"), tr("To start"), Qt::Key_Home);
  back_ = makeAction(this, QStringLiteral("step-back"), tr("Step back"), Qt::Key_Left);
  play_ = makeAction(this, QStringLiteral("play"), tr("Play"), Qt::Key_Space);
  forward_ = makeAction(this, QStringLiteral("step-forward"), tr("Step forward"), Qt::Key_Right);
  end_ = makeAction(this, QStringLiteral("to-end"), tr("To end"), Qt::Key_End);
  back_->setAutoRepeat(true);
  forward_->setAutoRepeat(true);
  connect(start_, &QAction::triggered, player_, &Player::toStart);
  connect(back_, &QAction::triggered, player_, &Player::stepBack);
  connect(play_, &QAction::triggered, player_, &Player::togglePlay);
  connect(forward_, &QAction::triggered, player_, &Player::stepForward);
  connect(end_, &QAction::triggered, player_, &Player::toEnd);

  slider_ = new QSlider(Qt::Horizontal);
  slider_->setMinimumWidth(160);
  slider_->setFocusPolicy(Qt::NoFocus);
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (v != player_->cursor()) player_->setCursor(v);
  });

  speed_ = new QComboBox;
  speed_->setToolTip(tr("Replay speed (1×: a whole run in about 20 s)"));
  for (double s : {0.25, 0.5, 1.0, 2.0, 4.0, 10.0})
    speed_->addItem(QStringLiteral("%1×").arg(s), s);
  speed_->setCurrentIndex(2);
  speed_->setFocusPolicy(Qt::NoFocus);
  connect(speed_, &QComboBox::currentIndexChanged, this,
          [this](int i) { player_->setSpeed(speed_->itemData(i).toDouble()); });

  readout_ = new QLabel;
  readout_->setTextFormat(Qt::RichText);
  readout_->setMinimumWidth(260);
  readout_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 2, 6, 2);
  layout->setSpacing(2);
  for (QAction* a : {start_, back_, play_, forward_, end_}) layout->addWidget(button(a));
  layout->addSpacing(6);
  layout->addWidget(slider_, 2);
  layout->addSpacing(6);
  layout->addWidget(speed_);
  layout->addSpacing(8);
  layout->addWidget(readout_, 3);

  connect(player_, &Player::cursorChanged, this, &PlayerBar::refresh);
  connect(player_, &Player::stepCountChanged, this, &PlayerBar::refresh);
  connect(player_, &Player::playingChanged, this, [this](bool playing) {
    play_->setIcon(
        QIcon(playing ? QStringLiteral(":/icons/pause.svg") : QStringLiteral(":/icons/play.svg")));
    play_->setText(playing ? tr("Pause") : tr("Play"));
    play_->setToolTip(QStringLiteral("%1 (Space)").arg(play_->text()));
  });
  refresh();
}

void PlayerBar::setDescriber(std::function<QString(std::int64_t)> describe) {
  describe_ = std::move(describe);
  refresh();
}

QList<QAction*> PlayerBar::playerActions() const {
  return {start_, back_, play_, forward_, end_};
}

void PlayerBar::refresh() {
  const std::int64_t n = player_->stepCount();
  const std::int64_t k = player_->cursor();
  for (QAction* a : playerActions()) a->setEnabled(n > 0);
  slider_->setEnabled(n > 0);
  {
    const QSignalBlocker block(slider_);
    slider_->setRange(0, static_cast<int>(std::max<std::int64_t>(0, n - 1)));
    slider_->setValue(static_cast<int>(std::max<std::int64_t>(0, k)));
  }
  if (n == 0 || k < 0) {
    readout_->setText(tr("<i>no run</i>"));
    return;
  }
  QString text = tr("step <b>%1</b> / %2").arg(k).arg(n - 1);
  if (describe_) {
    const QString d = describe_(k);
    if (!d.isEmpty()) text += QStringLiteral(" · ") + d;
  }
  readout_->setText(text);
}

}  // namespace ckpt::ui
