// A failed run in the app: its figures are marked as a failed run's, never as a saving, and
// the window says why it failed and what fixes it.

#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include "support/isolated_settings.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/panels/lessons_view.hpp"
#include "ui/panels/summary_view.hpp"
#include "ui/plot/memory_plot.hpp"

using namespace ckpt;
using namespace ckpt::ui;
using test::waitFor;
using test::waitIdle;
using test::waitReady;
using test::waitRunOf;

namespace {

constexpr int kTimeout = test::kWaitTimeoutMs;

// Every module checkpointed (reentrant) and no input requiring grad: PyTorch's backward fails.
const char* kModel = R"({
  "format": "checkpoint-lab-model", "version": 1, "name": "no-grad-input", "seed": 3, "batch": 4,
  "inputs": [{"name": "x", "shape": ["batch", 16], "requires_grad": false}],
  "model": {"type": "sequential", "layers": [
    {"type": "sequential", "name": "block", "layers": [
      {"type": "linear", "name": "fc", "in": 16, "out": 32}, {"type": "tanh"},
      {"type": "linear", "name": "head", "in": 32, "out": 2}]}]}
})";

}  // namespace

class TestHonestFailure : public QObject {
  Q_OBJECT
  QTemporaryDir home_;

 private slots:
  void initTestCase() { test::isolateSettings(home_, QStringLiteral("test_ui_honest_failure")); }

  void aFailedRunIsMarkedAndSaysWhatFixesIt() {
    QFile f(home_.filePath(QStringLiteral("model.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kModel);
    f.close();
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(f.fileName());
    QVERIFY(waitFor([&] { return w.isReady() && !w.session()->runs()->busy(); }));
    const auto plain = w.session()->current();
    QVERIFY(plain->summary.ok);
    QVERIFY(w.session()->toggleModule(QStringLiteral("block")));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s != plain && !w.session()->runs()->busy();
    }));
    const RunSummary& s = w.session()->current()->summary;
    QVERIFY(!s.ok);
    QVERIFY(s.failure.fix.find("non-reentrant") != std::string::npos);

    const QString summary = w.summaryView()->toPlainText();
    QVERIFY2(summary.contains(QStringLiteral("failed run")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("non-reentrant")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("peak (failed run)")), qPrintable(summary));
    // The ghost is the plain run: no "−x MiB" saving is claimed against it.
    QVERIFY2(!summary.contains(QStringLiteral("vs ")), qPrintable(summary));
    QVERIFY(w.banner()->isVisible() || !w.banner()->text().isEmpty());
    QVERIFY2(w.banner()->text().contains(QStringLiteral("Fix:")), qPrintable(w.banner()->text()));
    bool lessonSaysWhy = false;
    for (int i = 0; i < w.lessonsView()->count(); ++i) {
      const QListWidgetItem* item = w.lessonsView()->item(i);
      QVERIFY2(!item->text().contains(QStringLiteral("step -1")), qPrintable(item->text()));
      lessonSaysWhy = lessonSaysWhy || item->toolTip().contains(QStringLiteral("Why:"));
    }
    QVERIFY(lessonSaysWhy);
    QVERIFY(w.memoryPlot()->model().series->failed);

    // The fix the message names works: the non-reentrant variant runs.
    w.session()->setReentrant(false);
    QVERIFY(waitFor([&] {
      auto c = w.session()->current();
      return c && !c->request.settings.use_reentrant && !w.session()->runs()->busy();
    }));
    QVERIFY(w.session()->current()->summary.ok);
    QVERIFY(!w.summaryView()->toPlainText().contains(QStringLiteral("failed run")));
  }
};

QTEST_MAIN(TestHonestFailure)
#include "test_honest_failure.moc"
