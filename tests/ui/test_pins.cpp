// Pinned comparisons end to end, on the offscreen platform: pins are snapshots that keep their
// own curves and the engine's figures across variant changes, their visibility decides what the
// plot draws, the Pinned table shows their figures, and another model clears them.
// With CKPTLAB_SCREENSHOT_DIR set, the window with two pins is written there as
// pinned_comparisons.png (the README's picture).

#include <QDir>
#include <QDockWidget>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QSettings>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/run/runner.hpp"
#include "support/isolated_settings.hpp"
#include "support/test_models.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/panels/pins_view.hpp"
#include "ui/plot/memory_plot.hpp"

using namespace ckpt;
using namespace ckpt::ui;
using test::waitFor;
using test::waitIdle;
using test::waitReady;
using test::waitRunOf;

namespace {

constexpr int kTimeout = test::kWaitTimeoutMs;

// Pixels of exactly `colour` in the plot as the renderer draws its model: the pinned peak
// diamonds and legend swatches are filled with it, nothing else in the plot is.
int pixelsOf(const MemoryPlot& plot, const QColor& colour) {
  QImage image(QSize(1000, 400), QImage::Format_ARGB32);
  image.fill(Qt::white);
  QPainter p(&image);
  plot.renderer().render(p, QRectF(0, 0, 1000, 400), plot.model());
  p.end();
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) n += image.pixelColor(x, y) == colour;
  return n;
}

QString densenetPath() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") +
         QStringLiteral("/samples/densenet_block.json");
}

}  // namespace

class TestPins : public QObject {
  Q_OBJECT

  QTemporaryDir home_;
  test::ModelFiles models_;

 private slots:
  void initTestCase() {
    test::isolateSettings(home_, QStringLiteral("test_ui_pins"));
    QVERIFY2(QFileInfo::exists(densenetPath()), qPrintable(densenetPath()));
  }

  // Each test starts without saved pins (they are saved per model file, in the settings).
  void init() { QSettings().remove(QStringLiteral("pins")); }

  void pinsSurviveAVariantChangeWithTheEnginesPeaks() {
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(densenetPath());
    QVERIFY(waitIdle(w));
    Session* s = w.session();
    QVERIFY(w.pinAction() && w.pinAction()->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_P));
    // The Pinned dock waits for a pin; the first one shows it.
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("pinsDock"));
    QVERIFY(dock && !dock->isVisible());
    w.pinAction()->trigger();
    QCOMPARE(s->pins()->pins().size(), std::size_t(1));
    QVERIFY(dock->isVisible());
    const RunRequest plain = s->request();
    QVERIFY(plain.plan.modules.empty());

    QVERIFY(s->toggleModule(QStringLiteral("features.denseblock1")));
    QVERIFY(waitIdle(w));
    const RunRequest block = s->request();
    w.pinAction()->trigger();
    QCOMPARE(s->pins()->pins().size(), std::size_t(2));
    // Pinning the same configuration again adds nothing.
    QCOMPARE(s->pinCurrent(), s->pins()->pins()[1].id);
    QCOMPARE(s->pins()->pins().size(), std::size_t(2));

    s->setReentrant(false);
    QVERIFY(waitIdle(w));
    QVERIFY(!s->current()->request.settings.use_reentrant);
    const auto& pins = s->pins()->pins();
    QCOMPARE(pins.size(), std::size_t(2));
    QVERIFY(same_run(pins[0].request, plain));
    QVERIFY(same_run(pins[1].request, block));
    QVERIFY(pins[0].colour != pins[1].colour);
    QVERIFY2(pins[1].name.contains(QStringLiteral("features.denseblock1")),
             qPrintable(pins[1].name));

    // Each pin holds its own configuration's figures, as the engine computes them directly.
    Runner runner(s->model());
    for (const Pin& pin : pins) {
      const RunResult direct = runner.run(pin.request);
      QVERIFY(direct.ok);
      QCOMPARE(pin.figures.peakBytes, direct.trace.peak().bytes);
      QCOMPARE(pin.series->peak_bytes, direct.trace.peak().bytes);
      QCOMPARE(pin.series->steps(), direct.trace.step_count());
      QCOMPARE(pin.figures.recomputeExecutions, direct.trace.counts().recompute);
    }
    QVERIFY(pins[1].figures.peakBytes < pins[0].figures.peakBytes);
    QCOMPARE(pins[0].figures.recomputeExecutions, 0);
    QVERIFY(pins[1].figures.recomputeExecutions > 0);
    // Checkpointing drops the block's activations: less is saved for backward.
    QVERIFY(pins[1].figures.savedBytes < pins[0].figures.savedBytes);

    // The helpers' QCOMPARE returns from them only.
    checkTable(w);
    if (QTest::currentTestFailed()) return;
    saveScreenshot(w);
    checkVisibility(w);
    if (QTest::currentTestFailed()) return;

    // Another model: its runs are not comparable with these, the pins go.
    QSignalSpy changed(s->pins(), &PinList::changed);
    const QString other = models_.path(QStringLiteral("blocks.json"));
    w.openPath(other);
    QTRY_COMPARE_WITH_TIMEOUT(s->source(), other, kTimeout);
    QVERIFY(waitIdle(w));
    QVERIFY(s->pins()->pins().empty());
    QVERIFY(changed.count() >= 1);
    QVERIFY(w.memoryPlot()->model().pins.empty());
    QCOMPARE(w.pinsView()->table()->rowCount(), 2);  // the current run alone
  }

  // Pins are saved with the model file and come back, run again, when it is opened: names,
  // visibility, configurations and the engine's figures. Another model's opening does not
  // erase them; unpinning does; a corrupt saved list is ignored.
  // A plan from the Plan dock keeps each region's policy when its pin is saved and restored:
  // without it, the restored pin would run every region under the plan's policy.
  void savedPinsKeepEachRegionsPolicy() {
    Pin pin;
    pin.name = QStringLiteral("planned");
    pin.request.plan.modules = {"h.0", "h.1"};
    pin.request.plan.policy = SelectivePolicy::parse("save:mm");
    pin.request.plan.policies["h.1"] = SelectivePolicy{};
    pin.request.plan.policies["h.0"] = SelectivePolicy::parse("save:mm/2");
    const auto restored = savedPinsFromJson(savedPinsJson({pin}), RunRequest{});
    QCOMPARE(restored.size(), std::size_t(1));
    QVERIFY(restored[0].request.plan == pin.request.plan);
    QVERIFY(restored[0].request.plan.policy_for("h.1").empty());
  }

  void pinsAreSavedWithTheModelAndRestored() {
    QSettings().remove(QStringLiteral("pins"));
    const QString blocks = models_.path(QStringLiteral("blocks.json"));
    std::vector<Pin> before;
    {
      MainWindow w;
      w.resize(1440, 900);
      w.show();
      w.openPath(blocks);
      QVERIFY(waitIdle(w));
      Session* s = w.session();
      w.pinAction()->trigger();
      QVERIFY(s->toggleModule(QStringLiteral("block")));
      s->setReentrant(false);
      QVERIFY(waitIdle(w));
      w.pinAction()->trigger();
      QCOMPARE(s->pins()->pins().size(), std::size_t(2));
      QVERIFY(s->pins()->setVisible(s->pins()->pins()[0].id, false));
      QVERIFY(s->pins()->rename(s->pins()->pins()[1].id, QStringLiteral("my block")));
      before = s->pins()->pins();
    }
    // Opens `path` and waits until its saved pins are back.
    const auto reopen = [](MainWindow& w, const QString& path) {
      w.openPath(path);
      return waitFor([&] { return w.session()->source() == path; }) &&
             waitFor([&] { return !w.session()->restoringPins() && waitIdle(w); });
    };
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    QVERIFY(reopen(w, blocks));
    auto& after = w.session()->pins()->pins();
    QCOMPARE(after.size(), before.size());
    for (std::size_t i = 0; i < before.size(); ++i) {
      // Runs finish in any order: match by configuration.
      const Pin* p = w.session()->pins()->findRequest(before[i].request);
      QVERIFY2(p, qPrintable(before[i].name));
      QCOMPARE(p->name, before[i].name);
      QCOMPARE(p->visible, before[i].visible);
      QCOMPARE(p->figures.peakBytes, before[i].figures.peakBytes);
      QCOMPARE(p->figures.recomputeExecutions, before[i].figures.recomputeExecutions);
      QCOMPARE(p->series->steps(), before[i].series->steps());
    }
    QCOMPARE(w.memoryPlot()->model().pins.size(), std::size_t(1));  // the visible one

    // Opening another model clears the list, not what is saved.
    QVERIFY(reopen(w, densenetPath()));
    QVERIFY(w.session()->pins()->pins().empty());
    QVERIFY(reopen(w, blocks));
    QCOMPARE(w.session()->pins()->pins().size(), before.size());

    // Unpinning is saved too.
    w.session()->pins()->clear();
    QVERIFY(reopen(w, densenetPath()));
    QVERIFY(reopen(w, blocks));
    QVERIFY(w.session()->pins()->pins().empty());

    // A corrupt saved list restores nothing and breaks nothing.
    w.pinAction()->trigger();
    QCOMPARE(w.session()->pins()->pins().size(), std::size_t(1));
    QSettings settings;
    settings.beginGroup(QStringLiteral("pins"));
    for (const QString& key : settings.childKeys())
      settings.setValue(key, QByteArray("[{\"batch\": -3}, 7, {\"modules\": [1"));
    settings.endGroup();
    QVERIFY(reopen(w, densenetPath()));
    QVERIFY(reopen(w, blocks));
    QVERIFY(w.session()->pins()->pins().empty());
  }

 private:
  void checkTable(MainWindow& w) {
    const auto& pins = w.session()->pins()->pins();
    QTableWidget* t = w.pinsView()->table();
    // The current run, then the two pins: a name row and a figures row each.
    QCOMPARE(t->rowCount(), 6);
    QVERIFY(t->item(0, PinsView::nameColumn)->text().startsWith(QStringLiteral("current:")));
    QCOMPARE(t->item(1, PinsView::peakColumn)->text(),
             QString::fromStdString(formatBytes(w.session()->current()->summary.peak.bytes)));
    for (const Pin& pin : pins) {
      const int row = w.pinsView()->rowOf(pin.id);
      QVERIFY(row > 0);
      QCOMPARE(t->item(row, PinsView::nameColumn)->text(), pin.name);
      QCOMPARE(t->item(row + 1, PinsView::peakColumn)->text(),
               QString::fromStdString(formatBytes(pin.figures.peakBytes)));
      QCOMPARE(t->item(row + 1, PinsView::savedColumn)->text(),
               QString::fromStdString(formatBytes(pin.figures.savedBytes)));
      QCOMPARE(t->item(row + 1, PinsView::recomputeColumn)->text(),
               QString::number(pin.figures.recomputeExecutions));
      QCOMPARE(t->item(row, PinsView::colourColumn)->checkState(), Qt::Checked);
    }
  }

  // The table's checkbox hides a pin: the plot's model no longer holds it, the plot no
  // longer draws its colour; checking it again brings it back.
  void checkVisibility(MainWindow& w) {
    PinList* list = w.session()->pins();
    const Pin first = list->pins()[0];
    const Pin second = list->pins()[1];
    const MemoryPlot& plot = *w.memoryPlot();
    QCOMPARE(plot.model().pins.size(), std::size_t(2));
    QVERIFY(pixelsOf(plot, first.colour) > 0);
    QVERIFY(pixelsOf(plot, second.colour) > 0);

    QTableWidget* t = w.pinsView()->table();
    t->item(w.pinsView()->rowOf(first.id), PinsView::colourColumn)->setCheckState(Qt::Unchecked);
    QVERIFY(!list->find(first.id)->visible);
    QCOMPARE(plot.model().pins.size(), std::size_t(1));
    QCOMPARE(plot.model().pins[0].series, second.series);
    QCOMPARE(pixelsOf(plot, first.colour), 0);
    QVERIFY(pixelsOf(plot, second.colour) > 0);
    // Still in the table, unchecked.
    QCOMPARE(t->item(w.pinsView()->rowOf(first.id), PinsView::colourColumn)->checkState(),
             Qt::Unchecked);

    list->setVisible(first.id, true);
    QCOMPARE(plot.model().pins.size(), std::size_t(2));
    QCOMPARE(t->item(w.pinsView()->rowOf(first.id), PinsView::colourColumn)->checkState(),
             Qt::Checked);

    // Editing a name renames the pin; the plot's legend takes the new name.
    t->item(w.pinsView()->rowOf(first.id), PinsView::nameColumn)->setText(QStringLiteral("plain"));
    QCOMPARE(list->find(first.id)->name, QStringLiteral("plain"));
    QCOMPARE(plot.model().pins[0].name, QStringLiteral("plain"));

    // Unpin and pin back: the table and the plot follow the list.
    emit w.pinsView()->unpinRequested(second.id);
    QCOMPARE(list->pins().size(), std::size_t(1));
    QCOMPARE(t->rowCount(), 4);
    QCOMPARE(plot.model().pins.size(), std::size_t(1));
    QCOMPARE(plot.model().pins[0].series, first.series);
    // The current (non-reentrant) run is a configuration of its own: a new pin, a new colour.
    const quint64 again = w.session()->pinCurrent();
    QVERIFY(again != 0 && again != second.id);
    QCOMPARE(t->rowCount(), 6);
    const Pin* third = list->find(again);
    QVERIFY2(third->name.contains(QStringLiteral("non-reentrant")), qPrintable(third->name));
    QVERIFY(third->colour != first.colour);
    QCOMPARE(third->figures.peakBytes, w.session()->current()->summary.peak.bytes);
    QCOMPARE(t->item(w.pinsView()->rowOf(again) + 1, PinsView::peakColumn)->text(),
             QString::fromStdString(formatBytes(third->figures.peakBytes)));
  }

  void saveScreenshot(MainWindow& w) {
    const QString dir = qEnvironmentVariable("CKPTLAB_SCREENSHOT_DIR");
    if (dir.isEmpty()) return;
    QTest::qWait(200);
    const QString path = QDir(dir).filePath(QStringLiteral("pinned_comparisons.png"));
    QVERIFY2(w.grab().save(path), qPrintable(path));
  }
};

QTEST_MAIN(TestPins)
#include "test_pins.moc"
