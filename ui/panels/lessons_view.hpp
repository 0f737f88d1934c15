#pragma once

// The run's messages and lessons, in step order; a click moves the player to where it happens.

#include <QListWidget>

#include "engine/report/lessons.hpp"

namespace ckpt::ui {

class LessonsView : public QListWidget {
  Q_OBJECT

 public:
  explicit LessonsView(QWidget* parent = nullptr);
  void setLessons(const std::vector<Lesson>& lessons);

 signals:
  void stepRequested(std::int64_t step);
};

}  // namespace ckpt::ui
