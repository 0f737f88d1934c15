#pragma once

// Waiting for the window's asynchronous work (layout, dry and real runs on workers) in GUI tests:
// poll the session while the event loop runs, for at most two minutes (sanitizer builds are slow).

#include <QElapsedTimer>
#include <QtTest>
#include <functional>
#include <set>
#include <string>

#include "ui/app/main_window.hpp"

namespace ckpt::ui::test {

inline constexpr int kWaitTimeoutMs = 120000;

inline bool waitFor(const std::function<bool()>& done, int timeout_ms = kWaitTimeoutMs) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeout_ms) {
    if (done()) return true;
    QTest::qWait(20);
  }
  return false;
}

// Laid out and no run in flight.
inline bool waitReady(MainWindow& w) {
  return waitFor(
      [&] { return w.isReady() && !w.session()->runs()->busy() && !w.session()->layingOut(); });
}

// The current configuration's real run is shown and nothing else is pending.
inline bool waitIdle(MainWindow& w) {
  return waitFor([&] {
    auto snap = w.session()->current();
    return w.isReady() && snap && !snap->realRunFollows && !w.session()->runs()->busy() &&
           !w.session()->layingOut() && same_run(snap->request, w.session()->request());
  });
}

// A finished run of exactly these checkpointed modules is shown.
inline bool waitRunOf(MainWindow& w, const std::set<std::string>& modules) {
  return waitFor([&] {
    auto snap = w.session()->current();
    return snap && snap->request.plan.modules == modules && !w.session()->runs()->busy();
  });
}

}  // namespace ckpt::ui::test
