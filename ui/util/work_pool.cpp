#include "ui/util/work_pool.hpp"

#include <QThread>
#include <QThreadPool>
#include <algorithm>

namespace ckpt::ui {

QThreadPool* workPool() {
  static QThreadPool pool;
  static const bool configured = [] {
    pool.setMaxThreadCount(std::max(2, QThread::idealThreadCount()));
    pool.setObjectName(QStringLiteral("ckptlab-work"));
    return true;
  }();
  (void)configured;
  return &pool;
}

}  // namespace ckpt::ui
