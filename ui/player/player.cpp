#include "ui/player/player.hpp"

#include <algorithm>
#include <cmath>

namespace ckpt::ui {

Player::Player(QObject* parent) : QObject(parent) {
  timer_.setInterval(33);
  timer_.setTimerType(Qt::PreciseTimer);
  connect(&timer_, &QTimer::timeout, this, &Player::tick);
}

double Player::stepsPerSecond() const {
  return std::max(8.0, static_cast<double>(steps_) / 20.0) * speed_;
}

void Player::setStepCount(std::int64_t steps) {
  steps_ = std::max<std::int64_t>(0, steps);
  emit stepCountChanged(steps_);
  if (steps_ == 0) {
    pause();
    if (cursor_ != -1) {
      cursor_ = -1;
      emit cursorChanged(cursor_);
    }
    return;
  }
  setCursor(std::clamp<std::int64_t>(cursor_, 0, steps_ - 1));
}

void Player::setCursor(std::int64_t step) {
  if (steps_ == 0) return;
  step = std::clamp<std::int64_t>(step, 0, steps_ - 1);
  if (step == cursor_) return;
  cursor_ = step;
  emit cursorChanged(cursor_);
}

void Player::play() {
  if (steps_ == 0 || isPlaying()) return;
  if (cursor_ >= steps_ - 1) setCursor(0);  // Play at the end starts over
  carry_ = 0;
  clock_.start();
  timer_.start();
  emit playingChanged(true);
}

void Player::pause() {
  if (!isPlaying()) return;
  timer_.stop();
  emit playingChanged(false);
}

void Player::togglePlay() {
  isPlaying() ? pause() : play();
}

void Player::stepForward() {
  pause();
  setCursor(cursor_ + 1);
}

void Player::stepBack() {
  pause();
  setCursor(cursor_ - 1);
}

void Player::toStart() {
  pause();
  setCursor(0);
}

void Player::toEnd() {
  pause();
  setCursor(steps_ - 1);
}

void Player::setSpeed(double multiplier) {
  // NaN passes std::clamp untouched (a corrupt settings file can hold "nan").
  speed_ = std::isfinite(multiplier) ? std::clamp(multiplier, 0.05, 1000.0) : 1.0;
}

// Advances by wall time, not by ticks, so a slow frame does not slow the replay down.
void Player::tick() {
  const double elapsed = static_cast<double>(clock_.restart()) / 1000.0;
  carry_ += elapsed * stepsPerSecond();
  const auto whole = static_cast<std::int64_t>(std::floor(carry_));
  if (whole <= 0) return;
  carry_ -= static_cast<double>(whole);
  const std::int64_t next = std::min(cursor_ + whole, steps_ - 1);
  setCursor(next);
  if (next >= steps_ - 1) pause();
}

}  // namespace ckpt::ui
