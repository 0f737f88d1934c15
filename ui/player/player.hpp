#pragma once

// The player's cursor over a trace's steps. Every view is a function of (trace, cursor,
// selection), so stepping back costs the same as stepping forward.

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <cstdint>

namespace ckpt::ui {

class Player : public QObject {
  Q_OBJECT

 public:
  explicit Player(QObject* parent = nullptr);

  std::int64_t cursor() const { return cursor_; }
  std::int64_t stepCount() const { return steps_; }
  bool isPlaying() const { return timer_.isActive(); }
  // Multiplier of the base rate; the base rate plays a whole run in about 20 s, and never
  // slower than 8 steps a second, so a 100-step block and a 300,000-step HeavyModel both read.
  double speed() const { return speed_; }
  double stepsPerSecond() const;

  // A new trace: the cursor is kept (clamped) so that a re-run after a toggle stays in place.
  void setStepCount(std::int64_t steps);

 public slots:
  void setCursor(std::int64_t step);
  void play();
  void pause();
  void togglePlay();
  void stepForward();
  void stepBack();
  void toStart();
  void toEnd();
  void setSpeed(double multiplier);

 signals:
  void cursorChanged(std::int64_t step);
  void playingChanged(bool playing);
  void stepCountChanged(std::int64_t steps);

 private:
  void tick();

  std::int64_t steps_ = 0;
  std::int64_t cursor_ = -1;
  double speed_ = 1.0;
  double carry_ = 0;  // fractional steps owed by the timer
  QTimer timer_;
  QElapsedTimer clock_;
};

}  // namespace ckpt::ui
