#include <QSignalSpy>
#include <QtTest>

#include "ui/player/player.hpp"

using namespace ckpt::ui;

class TestPlayer : public QObject {
  Q_OBJECT

 private slots:
  void stepsAreClampedAndKeptAcrossRuns() {
    Player p;
    QCOMPARE(p.cursor(), std::int64_t(-1));
    p.stepForward();  // no trace: nothing to do
    QCOMPARE(p.cursor(), std::int64_t(-1));
    p.setStepCount(10);
    QCOMPARE(p.cursor(), std::int64_t(0));
    p.toEnd();
    QCOMPARE(p.cursor(), std::int64_t(9));
    p.stepForward();
    QCOMPARE(p.cursor(), std::int64_t(9));
    p.setCursor(6);
    // A re-run with more steps keeps the cursor; with fewer it is clamped.
    p.setStepCount(20);
    QCOMPARE(p.cursor(), std::int64_t(6));
    p.setStepCount(4);
    QCOMPARE(p.cursor(), std::int64_t(3));
    p.toStart();
    p.stepBack();
    QCOMPARE(p.cursor(), std::int64_t(0));
    p.setStepCount(0);
    QCOMPARE(p.cursor(), std::int64_t(-1));
  }

  void playAdvancesByWallTimeAndStopsAtTheEnd() {
    Player p;
    p.setStepCount(40);
    p.setSpeed(10.0);  // 80 steps per second for a short trace
    QCOMPARE(p.stepsPerSecond(), 80.0);
    QSignalSpy playing(&p, &Player::playingChanged);
    p.play();
    QVERIFY(p.isPlaying());
    QTRY_VERIFY_WITH_TIMEOUT(!p.isPlaying(), 5000);
    QCOMPARE(p.cursor(), std::int64_t(39));
    QCOMPARE(playing.size(), 2);
    // Play at the end starts over.
    p.play();
    QVERIFY(p.cursor() < 5);
    p.pause();
    QVERIFY(!p.isPlaying());
  }

  void baseRateScalesWithTheTrace() {
    Player p;
    p.setStepCount(300000);
    QCOMPARE(p.stepsPerSecond(), 15000.0);  // a whole HeavyModel replay in about 20 s
    p.setStepCount(50);
    QCOMPARE(p.stepsPerSecond(), 8.0);
  }
};

QTEST_MAIN(TestPlayer)
#include "test_player.moc"
