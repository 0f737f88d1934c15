#pragma once

// Transport controls for the Player: to start, step back, play/pause, step forward, to end,
// a scrubber, the speed, and a read-out of the step at the cursor. The actions carry the
// keyboard shortcuts (Space, Left, Right, Home, End) for the whole window.

#include <QWidget>
#include <functional>

class QAction;
class QComboBox;
class QLabel;
class QSlider;
class QToolButton;

namespace ckpt::ui {

class Player;

class PlayerBar : public QWidget {
  Q_OBJECT

 public:
  PlayerBar(Player* player, QWidget* parent = nullptr);

  // Describes step k for the read-out ("backward · ConvolutionBackward0 · features.conv0").
  void setDescriber(std::function<QString(std::int64_t)> describe);
  QList<QAction*> playerActions() const;
  QAction* playAction() const { return play_; }

 private:
  void refresh();

  Player* player_;
  std::function<QString(std::int64_t)> describe_;
  QAction* play_;
  QAction* back_;
  QAction* forward_;
  QAction* start_;
  QAction* end_;
  QSlider* slider_;
  QComboBox* speed_;
  QLabel* readout_;
};

}  // namespace ckpt::ui
