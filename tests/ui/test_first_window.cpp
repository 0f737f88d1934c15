// The first window on a given screen: a first start, a restored state that does not suit the
// screen (the 60 px docks an offscreen render once saved, a window larger than the screen or
// tiny on it), growing the window, View ▸ Reset Layout, and a --screenshot run that must leave
// the settings alone. CTest runs it once per screen size (1366x768, 1440x900, 1920x1080): the
// offscreen platform's screen comes from a config file named in QT_QPA_PLATFORM.

#include <QAction>
#include <QDockWidget>
#include <QProcess>
#include <QScreen>
#include <QSettings>
#include <QTemporaryDir>
#include <QToolBar>
#include <QtTest>

#include "support/isolated_settings.hpp"
#include "ui/app/main_window.hpp"
#include "ui/app/window_layout.hpp"
#include "ui/graph/graph_view.hpp"

using namespace ckpt::ui;

namespace {

// The docks a user reads: module names, the sample's notes, the run's figures, the Inspector.
const char* const kReadDocks[] = {"modulesDock", "notesDock", "summaryDock", "inspectorDock"};

QDockWidget* dock(const MainWindow& w, const char* name) {
  return w.findChild<QDockWidget*>(QLatin1String(name));
}

// The first show places the docks and repairs them on the next turn of the event loop.
void showAndSettle(MainWindow& w) {
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QTest::qWait(100);
}

// Closing saves the settings, as quitting the app does.
void closeAndSave(MainWindow& w) {
  QVERIFY(w.close());
  QSettings().sync();
}

}  // namespace

class TestFirstWindow : public QObject {
  Q_OBJECT

  QTemporaryDir home_;
  QRect available_;

  void forgetSettings() {
    QSettings s;
    s.clear();
    s.sync();
  }

  void expectReadable(const MainWindow& w, const char* when) {
    const QString where = QStringLiteral("%1 on %2x%3, window %4x%5")
                              .arg(QLatin1String(when))
                              .arg(available_.width())
                              .arg(available_.height())
                              .arg(w.width())
                              .arg(w.height());
    QVERIFY2(geometryProblem(w.size(), available_).isEmpty(), qPrintable(where));
    for (const char* name : kReadDocks) {
      QDockWidget* d = dock(w, name);
      QVERIFY2(d && d->isVisible() && !d->isFloating(), name);
      QVERIFY2(d->width() >= kMinSideDockWidth,
               qPrintable(QStringLiteral("%1: %2 is %3 px wide, under %4")
                              .arg(where, QLatin1String(name))
                              .arg(d->width())
                              .arg(kMinSideDockWidth)));
    }
    // The docks must not crowd out the graph either.
    QVERIFY2(w.graphView()->width() >= 400,
             qPrintable(where + QStringLiteral(": graph %1 px").arg(w.graphView()->width())));
  }

 private slots:
  void initTestCase() {
    test::isolateSettings(home_, QStringLiteral("test_ui_first_window"));
    available_ = QGuiApplication::primaryScreen()->availableGeometry();
    // The screen this run simulates must be the one CTest asked for, or nothing is tested.
    const QString wanted = qEnvironmentVariable("CKPTLAB_TEST_SCREEN");
    if (!wanted.isEmpty())
      QCOMPARE(QStringLiteral("%1x%2").arg(available_.width()).arg(available_.height()), wanted);
  }

  void init() { forgetSettings(); }

  void firstStartSuitsTheScreen() {
    MainWindow w;
    showAndSettle(w);
    QCOMPARE(w.size(), defaultWindowGeometry(available_).size());
    expectReadable(w, "first start");
  }

  // What a --screenshot run once left behind: a 1066x554 window with 60-90 px docks.
  void narrowDocksFromARenderAreRepaired() {
    {
      MainWindow render;
      render.resize(1066, 554);
      showAndSettle(render);
      // The docks as they were before they had a minimum width.
      for (QDockWidget* d : render.findChildren<QDockWidget*>()) d->setMinimumWidth(0);
      render.resizeDocks({dock(render, "modulesDock"), dock(render, "summaryDock")}, {60, 90},
                         Qt::Horizontal);
      QTest::qWait(50);
      QVERIFY2(dock(render, "modulesDock")->width() < 120, "the test's narrow state is not");
      closeAndSave(render);
    }
    MainWindow w;
    showAndSettle(w);
    expectReadable(w, "after a narrow saved state");
  }

  void windowLargerThanTheScreenIsRepaired() {
    {
      MainWindow big;
      big.resize(available_.size() + QSize(400, 300));
      showAndSettle(big);
      QVERIFY(big.width() > available_.width());
      closeAndSave(big);
    }
    MainWindow w;
    showAndSettle(w);
    expectReadable(w, "after a window larger than the screen");
  }

  void tinyWindowIsReset() {
    {
      MainWindow tiny;
      tiny.resize(available_.size() * 0.45);
      showAndSettle(tiny);
      // The window cannot be smaller than its docks and graph need.
      if (!geometryProblem(tiny.size(), available_).contains(QLatin1String("tiny")))
        QSKIP("the window's minimum size is not tiny on this screen");
      closeAndSave(tiny);
    }
    MainWindow w;
    showAndSettle(w);
    QCOMPARE(w.size(), defaultWindowGeometry(available_).size());
    expectReadable(w, "after a tiny window");
  }

  // A window that suits the screen comes back as the user left it: the repair is no reset.
  void aSuitableWindowIsRestored() {
    const QSize size(available_.width() * 9 / 10, available_.height() * 9 / 10);
    int modulesWidth = 0;
    {
      MainWindow mine;
      mine.applyDefaultLayout(QRect(available_.topLeft(), size));
      showAndSettle(mine);
      mine.resizeDocks({dock(mine, "modulesDock")}, {kMinSideDockWidth + 40}, Qt::Horizontal);
      QTest::qWait(50);
      modulesWidth = dock(mine, "modulesDock")->width();
      closeAndSave(mine);
    }
    MainWindow w;
    showAndSettle(w);
    QCOMPARE(w.size(), size);
    QCOMPARE(dock(w, "modulesDock")->width(), modulesWidth);
    expectReadable(w, "restored");
  }

  void enlargingTheWindowWidensTheDocks() {
    MainWindow w;
    w.applyDefaultLayout(QRect(available_.topLeft(),
                               QSize(available_.width() * 6 / 10, available_.height() * 8 / 10)));
    showAndSettle(w);
    const int left = dock(w, "modulesDock")->width(), right = dock(w, "summaryDock")->width();
    const int graph = w.graphView()->width(), before = w.width();
    w.resize(available_.width(), w.height());
    QTest::qWait(100);
    QVERIFY(w.width() > before * 1.1);
    const double grew = static_cast<double>(w.width()) / before;
    // Each column takes about its share of the new width, not the graph alone.
    QVERIFY2(
        dock(w, "modulesDock")->width() >= left * (1 + (grew - 1) * 0.8),
        qPrintable(
            QStringLiteral("Modules %1 -> %2 px").arg(left).arg(dock(w, "modulesDock")->width())));
    QVERIFY2(dock(w, "summaryDock")->width() >= right * (1 + (grew - 1) * 0.8),
             qPrintable(QStringLiteral("Run summary %1 -> %2 px")
                            .arg(right)
                            .arg(dock(w, "summaryDock")->width())));
    QVERIFY(w.graphView()->width() > graph);
  }

  void resetLayoutRestoresTheDefaults() {
    QSize defaultSize;
    QList<int> defaultWidths;
    {
      MainWindow fresh;
      showAndSettle(fresh);
      defaultSize = fresh.size();
      for (const char* name : kReadDocks) defaultWidths << dock(fresh, name)->width();
    }
    MainWindow w;
    showAndSettle(w);
    dock(w, "notesDock")->setFloating(true);
    dock(w, "summaryDock")->hide();
    w.resizeDocks({dock(w, "modulesDock")}, {available_.width() / 3}, Qt::Horizontal);
    auto* bar = w.findChild<QToolBar*>(QStringLiteral("runToolBar"));
    w.addToolBar(Qt::LeftToolBarArea, bar);
    w.resize(available_.size() * 0.7);
    QTest::qWait(100);

    auto* reset = w.findChild<QAction*>(QStringLiteral("resetLayoutAction"));
    QVERIFY(reset);
    reset->trigger();
    QTest::qWait(100);
    QCOMPARE(w.size(), defaultSize);
    QCOMPARE(w.toolBarArea(bar), Qt::TopToolBarArea);
    QList<int> widths;
    for (const char* name : kReadDocks) widths << dock(w, name)->width();
    QCOMPARE(widths, defaultWidths);
    expectReadable(w, "after Reset Layout");
  }

  void screenshotLeavesTheSettingsAlone_data() {
    QTest::addColumn<bool>("existing");
    QTest::newRow("saved settings") << true;
    QTest::newRow("first start") << false;
  }

  // The real program: `ckptlab --screenshot` must write no settings (no Open Recent entry, no
  // window state), whether the user has settings or none yet.
  void screenshotLeavesTheSettingsAlone() {
    QFETCH(bool, existing);
    QTemporaryDir profile;
    const QString conf = profile.filePath(QStringLiteral("config/ckptlab/Checkpoint Lab.conf"));
    QByteArray before;
    if (existing) {
      QVERIFY(QDir().mkpath(QFileInfo(conf).path()));
      before = "[files]\nrecent=/home/user/model.json\n\n[view]\ntheme=light\n";
      QFile f(conf);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(before);
    }
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), profile.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_CACHE_HOME"), profile.filePath(QStringLiteral("cache")));
    QProcess app;
    app.setProcessEnvironment(env);
    const QString shot = profile.filePath(QStringLiteral("shot.png"));
    const QString model =
        qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + QStringLiteral("/samples/mlp.json");
    app.start(QStringLiteral(CKPTLAB_GUI_BINARY), {QStringLiteral("--screenshot"), shot, model});
    QVERIFY(app.waitForFinished(120000));
    QVERIFY2(app.exitCode() == 0, app.readAllStandardError().constData());
    QVERIFY(QImage(shot).width() > 0);
    if (existing) {
      QFile f(conf);
      QVERIFY(f.open(QIODevice::ReadOnly));
      QCOMPARE(f.readAll(), before);
    } else {
      QVERIFY2(!QFileInfo::exists(conf), "a render wrote the settings of a first start");
    }
  }

  // The program's run settings: a render at the device, optimizer and batch asked for (its
  // line on stdout says what it shows), and a bad value refused before any window, naming it.
  void commandLineSettingsReachTheRun() {
    QTemporaryDir profile;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), profile.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_CACHE_HOME"), profile.filePath(QStringLiteral("cache")));
    const QString model =
        qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + QStringLiteral("/samples/gpt_mini.json");
    const QString shot = profile.filePath(QStringLiteral("shot.png"));
    QProcess app;
    app.setProcessEnvironment(env);
    app.start(
        QStringLiteral(CKPTLAB_GUI_BINARY),
        {QStringLiteral("--screenshot"), shot, QStringLiteral("--device"), QStringLiteral("cuda"),
         QStringLiteral("--optimizer"), QStringLiteral("adamw"), QStringLiteral("--amp"),
         QStringLiteral("bf16"), QStringLiteral("--batch"), QStringLiteral("3"), model});
    QVERIFY(app.waitForFinished(120000));
    QVERIFY2(app.exitCode() == 0, app.readAllStandardError().constData());
    const QString said = QString::fromUtf8(app.readAllStandardOutput());
    QVERIFY2(said.contains(QStringLiteral("adamw")) && said.contains(QStringLiteral("CUDA")) &&
                 said.contains(QStringLiteral("bf16")) && said.contains(QStringLiteral("batch 3,")),
             qPrintable(said));
    QVERIFY(QImage(shot).width() > 0);
    for (const auto& [option, value] :
         {std::pair{"--optimizer", "adamx"}, std::pair{"--device", "gpu"},
          std::pair{"--batch", "0"}, std::pair{"--amp", "fp8"}}) {
      QProcess bad;
      bad.setProcessEnvironment(env);
      bad.start(QStringLiteral(CKPTLAB_GUI_BINARY),
                {QStringLiteral("--screenshot"), shot, QLatin1String(option), QLatin1String(value),
                 model});
      QVERIFY(bad.waitForFinished(60000));
      QCOMPARE(bad.exitCode(), 2);
      const QString why = QString::fromUtf8(bad.readAllStandardError());
      QVERIFY2(why.contains(QLatin1String(option)) && why.contains(QLatin1String(value)),
               qPrintable(why));
    }
  }
};

QTEST_MAIN(TestFirstWindow)
#include "test_first_window.moc"
