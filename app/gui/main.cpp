// ckptlab: opens a model (a path on the command line, or the embedded default sample) in the
// main window. --screenshot FILE renders the window once the first run and layout are done.

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <stdexcept>

#include "engine/report/config_text.hpp"
#include "ui/player/player.hpp"
#include "ui/session/session.hpp"

#include "ui/app/main_window.hpp"

namespace {

struct Options {
  QCommandLineParser parser;
  QCommandLineOption screenshot{QStringLiteral("screenshot"),
                                QStringLiteral("Render the window to FILE after the first run and "
                                               "layout, then exit (needs no display; writes no "
                                               "settings)."),
                                QStringLiteral("FILE")};
  QCommandLineOption size{QStringLiteral("size"),
                          QStringLiteral("Window size WxH, with the default layout (default "
                                         "with --screenshot: as a normal start, or 1440x900 "
                                         "offscreen)."),
                          QStringLiteral("WxH")};
  QCommandLineOption checkpoint{QStringLiteral("checkpoint"),
                                QStringLiteral("Checkpoint MODULE once opened (repeatable)."),
                                QStringLiteral("MODULE")};
  QCommandLineOption timeout{
      QStringLiteral("timeout"),
      QStringLiteral("With --screenshot: give up after SECONDS (default 120)."),
      QStringLiteral("SECONDS"), QStringLiteral("120")};
  QCommandLineOption snapshot{
      QStringLiteral("snapshot"),
      QStringLiteral("Open a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) beside "
                     "the model: its measured curve over the engine's prediction."),
      QStringLiteral("FILE")};
  QCommandLineOption device{QStringLiteral("device"),
                            QStringLiteral("Whose memory: cpu (this engine's run, the default) or "
                                           "cuda (what PyTorch 2.x holds on an NVIDIA GPU, as a "
                                           "dry run)."),
                            QStringLiteral("DEVICE")};
  QCommandLineOption optimizer{
      QStringLiteral("optimizer"),
      QStringLiteral("End the training step with an optimizer's step: none, sgd, momentum, adam "
                     "or adamw."),
      QStringLiteral("KIND")};
  QCommandLineOption amp{QStringLiteral("amp"),
                         QStringLiteral("Mixed precision: off (float32, the default), bf16 or fp16 "
                                        "(the forward and the loss under torch.autocast)."),
                         QStringLiteral("MODE")};
  QCommandLineOption batch{QStringLiteral("batch"),
                           QStringLiteral("Run at batch size N (default: the model's)."),
                           QStringLiteral("N")};
  QCommandLineOption fsdp{QStringLiteral("fsdp"),
                          QStringLiteral("Shard the model with FSDP2 over N GPUs (the Ranks "
                                         "control): the plot and the summary show one rank."),
                          QStringLiteral("N")};
  QCommandLineOption paramDtype{
      QStringLiteral("param-dtype"),
      QStringLiteral("The parameters' compute dtype (FSDP2's MixedPrecisionPolicy): fp32 or bf16."),
      QStringLiteral("DTYPE")};
  QCommandLineOption at{QStringLiteral("at"),
                        QStringLiteral("Put the player's cursor at WHERE once run: a step number, "
                                       "'peak', 'forward-end' or 'recompute' (the middle of the "
                                       "first recompute)."),
                        QStringLiteral("WHERE")};

  Options() {
    parser.setApplicationDescription(QStringLiteral(
        "Activation checkpointing, made visible: click blocks to checkpoint them and watch a "
        "real forward and backward with a live memory plot. Headless runs: ckptlab-cli."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(
        QStringLiteral("model"),
        QStringLiteral("A .json or .onnx model (default: a bundled sample)."));
    parser.addOptions({screenshot, size, checkpoint, device, optimizer, amp, batch, fsdp,
                       paramDtype, timeout, at, snapshot});
  }
};

void setApplicationNames() {
  QCoreApplication::setApplicationName(QStringLiteral("Checkpoint Lab"));
  QCoreApplication::setOrganizationName(QStringLiteral("ckptlab"));
  QCoreApplication::setApplicationVersion(QStringLiteral(CKPTLAB_VERSION));
}

bool hasArgument(int argc, char** argv, std::initializer_list<const char*> names) {
  for (int i = 1; i < argc; ++i)
    for (const char* n : names)
      if (const std::size_t len = std::strlen(n);
          std::strncmp(argv[i], n, len) == 0 && (argv[i][len] == '\0' || argv[i][len] == '='))
        return true;
  return false;
}

// Without a display, only a screenshot can go on (offscreen); anything else is told why not.
bool chooseDisplay(int argc, char** argv) {
  const bool noDisplay = qEnvironmentVariableIsEmpty("DISPLAY") &&
                         qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
                         qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
  if (!noDisplay) return true;
  if (hasArgument(argc, argv, {"--screenshot"})) {
    qputenv("QT_QPA_PLATFORM", "offscreen");  // a screenshot needs no screen
    return true;
  }
  std::fprintf(stderr,
               "ckptlab: no display to open a window on (DISPLAY is not set). Run it in a "
               "desktop session, under xvfb-run, with --screenshot FILE, or use "
               "ckptlab-cli for headless runs.\n");
  return false;
}

// The offscreen platform's screen is no real one: a render there gets 1440x900 unless told.
void sizeWindow(ckpt::ui::MainWindow& window, const Options& options, bool rendering) {
  const bool offscreen = QGuiApplication::platformName() == QLatin1String("offscreen");
  if (!(rendering && offscreen) && !options.parser.isSet(options.size)) return;
  const QStringList wh = options.parser.value(options.size).split(QLatin1Char('x'));
  const int w = wh.size() == 2 ? wh[0].toInt() : 1440;
  const int h = wh.size() == 2 ? wh[1].toInt() : 900;
  window.applyDefaultLayout(QRect(0, 0, w > 0 ? w : 1440, h > 0 ? h : 900));
}

// The step --at names in the current run (-1: none).
std::int64_t stepAt(ckpt::ui::MainWindow& window, const QString& where) {
  const auto snap = window.session()->current();
  if (!snap) return -1;
  const auto& trace = snap->trace();
  if (where == QLatin1String("peak")) return snap->series->peak_step;
  if (where == QLatin1String("forward-end")) return snap->series->forward_end;
  if (where == QLatin1String("recompute") && !trace.recomputes().empty())
    return (trace.recomputes().front().begin_step + trace.recomputes().front().end_step) / 2;
  return where.isEmpty() ? -1 : where.toLongLong();
}

// What the command line asks of the window once it is up: checkpoint modules, place the
// cursor, render the screenshot and exit (or give up after --timeout).
// The run settings the command line names, checked before any window opens.
struct StartupSettings {
  std::optional<ckpt::Device> device;
  std::optional<ckpt::OptimizerKind> optimizer;
  std::optional<ckpt::AmpMode> amp;
  std::int64_t batch = 0;  // 0: the model's
  int fsdp = 0;            // 0: not sharded
  std::optional<ckpt::DType> param_dtype;
  bool any() const { return device || optimizer || amp || batch > 0 || fsdp > 0 || param_dtype; }
};

// The settings, or a message naming the bad value.
std::optional<StartupSettings> readSettings(const Options& o, QString* error) {
  StartupSettings s;
  const QCommandLineParser& p = o.parser;
  if (p.isSet(o.device)) {
    const QString d = p.value(o.device);
    if (d == QLatin1String("cpu") || d == QLatin1String("cuda")) {
      s.device = d == QLatin1String("cpu") ? ckpt::Device::cpu : ckpt::Device::cuda;
    } else {
      *error = QStringLiteral("--device: '%1' is not a device (cpu, cuda)").arg(d);
      return std::nullopt;
    }
  }
  if (p.isSet(o.optimizer)) {
    try {
      s.optimizer = ckpt::optimizer_from_name(p.value(o.optimizer).toStdString());
    } catch (const std::invalid_argument& e) {
      *error = QStringLiteral("--optimizer: %1").arg(QString::fromUtf8(e.what()));
      return std::nullopt;
    }
  }
  if (p.isSet(o.amp)) {
    try {
      s.amp = ckpt::amp_from_name(p.value(o.amp).toStdString());
    } catch (const std::invalid_argument& e) {
      *error = QStringLiteral("--amp: %1").arg(QString::fromUtf8(e.what()));
      return std::nullopt;
    }
  }
  if (p.isSet(o.batch)) {
    bool ok = false;
    s.batch = p.value(o.batch).toLongLong(&ok);
    if (!ok || s.batch < 1) {
      *error = QStringLiteral("--batch: '%1' is not a positive whole number").arg(p.value(o.batch));
      return std::nullopt;
    }
  }
  if (p.isSet(o.fsdp)) {
    bool ok = false;
    s.fsdp = p.value(o.fsdp).toInt(&ok);
    if (!ok || s.fsdp < 1 || s.fsdp > 65536) {
      *error =
          QStringLiteral("--fsdp: '%1' is not a number of ranks in 1..65536").arg(p.value(o.fsdp));
      return std::nullopt;
    }
  }
  if (p.isSet(o.paramDtype)) {
    const QString d = p.value(o.paramDtype);
    if (d != QLatin1String("fp32") && d != QLatin1String("bf16")) {
      *error = QStringLiteral("--param-dtype: '%1' is not fp32 or bf16").arg(d);
      return std::nullopt;
    }
    s.param_dtype = d == QLatin1String("bf16") ? ckpt::DType::bf16 : ckpt::DType::f32;
  }
  return s;
}

struct Startup {
  ckpt::ui::MainWindow& window;
  StartupSettings settings;
  QStringList toCheckpoint;
  QString where;
  QString shot;
  int exitCode = 0;

  // Once the wanted configuration has run: place the cursor, then take the screenshot.
  void settle() {
    if (const std::int64_t step = stepAt(window, where); step >= 0)
      window.player()->setCursor(step);
    if (shot.isEmpty()) return;
    QTimer::singleShot(150, &window, [this] {
      if (!window.grab().save(shot)) {
        std::fprintf(stderr, "ckptlab: cannot write %s\n", qPrintable(shot));
        exitCode = 1;
      } else if (const auto run = window.session()->current()) {
        // What the picture shows, for a render made without looking at it.
        std::printf("ckptlab: wrote %s: %s, batch %lld, peak %lld bytes\n", qPrintable(shot),
                    ckpt::describe_request(run->request).c_str(),
                    static_cast<long long>(window.session()->effectiveBatch()),
                    static_cast<long long>(run->trace().peak().bytes));
      }
      QApplication::exit(exitCode);
    });
  }

  void connect(int timeoutSeconds) {
    QObject::connect(&window, &ckpt::ui::MainWindow::ready, &window, [this] {
      if (toCheckpoint.isEmpty() && !settings.any()) {
        settle();
        return;
      }
      // The wanted configuration's run comes next: one request, the last one made.
      QObject::connect(window.session(), &ckpt::ui::Session::runFinished, &window,
                       [this] { settle(); });
      ckpt::ui::Session* session = window.session();
      if (settings.device) session->setDevice(*settings.device);
      if (settings.optimizer) session->setOptimizer(*settings.optimizer);
      if (settings.amp) session->setPrecision(*settings.amp);
      if (settings.batch > 0) session->setBatch(settings.batch);
      if (settings.param_dtype) session->setParamDtype(*settings.param_dtype);
      if (settings.fsdp > 0) {
        ckpt::FsdpSettings fsdp = session->request().settings.fsdp;
        fsdp.ranks = settings.fsdp;
        session->setFsdp(fsdp);
      }
      for (const QString& m : toCheckpoint) session->toggleModule(m);
    });
    QObject::connect(window.session(), &ckpt::ui::Session::openFailed, &window,
                     [this](const QString& message) {
                       std::fprintf(stderr, "ckptlab: %s\n", qPrintable(message));
                       if (!shot.isEmpty()) QApplication::exit(1);
                     });
    if (shot.isEmpty()) return;
    QTimer::singleShot(std::max(1, timeoutSeconds) * 1000, &window, [timeoutSeconds] {
      std::fprintf(stderr, "ckptlab: --screenshot timed out after %d s\n", timeoutSeconds);
      QApplication::exit(2);
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  // --help and --version, and a bad option, must answer without a display: Qt's GUI platform
  // plugin aborts the process when it cannot connect, so they are parsed by a core application.
  if (hasArgument(argc, argv, {"-h", "--help", "--help-all", "-v", "--version"})) {
    QCoreApplication core(argc, argv);
    setApplicationNames();
    Options o;
    o.parser.process(core);
    return 0;
  }
  if (!chooseDisplay(argc, argv)) return 1;

  QApplication app(argc, argv);
  setApplicationNames();
  QApplication::setDesktopFileName(QStringLiteral("ckptlab"));

  Options options;
  QCommandLineParser& parser = options.parser;
  parser.process(app);
  QString badSetting;
  const std::optional<StartupSettings> settings = readSettings(options, &badSetting);
  if (!settings) {
    std::fprintf(stderr, "ckptlab: %s\n", qPrintable(badSetting));
    return 2;
  }

  const QString shot = parser.value(options.screenshot);
  // A render is nobody's session: it must not join Open Recent nor leave its window state for
  // the next start (that is how an offscreen render once left 60 px docks behind).
  ckpt::ui::MainWindow window(nullptr, shot.isEmpty()
                                           ? ckpt::ui::MainWindow::SettingsUse::readWrite
                                           : ckpt::ui::MainWindow::SettingsUse::readOnly);
  sizeWindow(window, options, !shot.isEmpty());
  window.show();

  if (parser.isSet(options.snapshot)) {
    QString error;
    if (!window.openSnapshot(parser.value(options.snapshot), &error)) {
      std::fprintf(stderr, "ckptlab: %s\n", qPrintable(error));
      if (!shot.isEmpty()) return 1;
    }
  }
  Startup startup{window, *settings, parser.values(options.checkpoint), parser.value(options.at),
                  shot};
  startup.connect(parser.value(options.timeout).toInt());

  const QStringList args = parser.positionalArguments();
  if (!args.isEmpty()) {
    const QString path = args.front();
    if (!path.startsWith(QLatin1String(":/")) && !QFileInfo::exists(path)) {
      std::fprintf(stderr, "ckptlab: %s: no such file\n", qPrintable(path));
      if (!shot.isEmpty()) return 1;
    }
    window.openPath(path);
  } else {
    window.openDefaultSample();
  }
  return app.exec();
}
