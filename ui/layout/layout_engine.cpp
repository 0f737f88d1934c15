#include "ui/layout/layout_engine.hpp"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFutureWatcher>
#include <QSaveFile>
#include <QtConcurrent/QtConcurrentRun>

#include "ui/util/work_pool.hpp"

#include "ui/layout/dot_format.hpp"

namespace ckpt::ui {

namespace {

struct ParseOutcome {
  std::shared_ptr<LayoutResult> result;
  QString error;
};

ParseOutcome parseOutcome(const QByteArray& json, const std::shared_ptr<const LayoutGraph>& g) {
  ParseOutcome out;
  try {
    out.result = std::make_shared<LayoutResult>(
        parseDotJson(std::string_view(json.data(), json.size()), *g));
  } catch (const std::exception& e) {
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

}  // namespace

LayoutEngine::LayoutEngine(QObject* parent) : QObject(parent) {
  timeout_.setSingleShot(true);
  connect(&timeout_, &QTimer::timeout, this, &LayoutEngine::onTimeout);
}

LayoutEngine::~LayoutEngine() {
  stopProcess();
}

QString LayoutEngine::diskPath(const QByteArray& key) const {
  if (cacheDir_.isEmpty()) return {};
  return QDir(cacheDir_).filePath(QString::fromLatin1(key.toHex()) + QStringLiteral(".json"));
}

quint64 LayoutEngine::request(const LayoutGraph& graph) {
  stopProcess();
  const quint64 id = ++nextId_;
  currentId_ = id;
  currentGraph_ = std::make_shared<const LayoutGraph>(graph);
  std::string dot;
  try {
    dot = toDot(graph);
  } catch (const std::exception& e) {
    QString message = QString::fromStdString(e.what());
    QMetaObject::invokeMethod(
        this,
        [this, id, message] {
          if (id == currentId_) fail(message);
        },
        Qt::QueuedConnection);
    setBusy(true);
    return id;
  }
  currentKey_ = QCryptographicHash::hash(QByteArray::fromStdString(dot), QCryptographicHash::Sha1);
  setBusy(true);

  if (auto hit = cache_.find(currentKey_); hit != cache_.end()) {
    LayoutResultPtr result = hit.value();
    lastDotMs_ = 0;
    QMetaObject::invokeMethod(
        this,
        [this, id, result] {
          if (id != currentId_) return;
          setBusy(false);
          emit finished(id, result);
        },
        Qt::QueuedConnection);
    return id;
  }
  if (QString path = diskPath(currentKey_); !path.isEmpty()) {
    QFile f(path);
    if (f.open(QIODevice::ReadOnly)) {
      stdout_ = f.readAll();
      lastDotMs_ = 0;
      QMetaObject::invokeMethod(
          this,
          [this, id] {
            if (id == currentId_) finishParse();
          },
          Qt::QueuedConnection);
      return id;
    }
  }

  stdout_.clear();
  process_ = new QProcess(this);
  connect(process_, &QProcess::finished, this, &LayoutEngine::onProcessFinished);
  connect(process_, &QProcess::errorOccurred, this, &LayoutEngine::onProcessError);
  startedAtMs_ = QDateTime::currentMSecsSinceEpoch();
  process_->start(dotProgram_, {QStringLiteral("-Tjson0")});
  process_->write(QByteArray::fromStdString(dot));
  process_->closeWriteChannel();
  if (timeLimitMs_ > 0) timeout_.start(timeLimitMs_);
  return id;
}

void LayoutEngine::cancel() {
  if (!busy_) return;
  stopProcess();
  currentId_ = ++nextId_;  // any parse still running is now stale
  setBusy(false);
}

void LayoutEngine::stopProcess() {
  timeout_.stop();
  if (!process_) return;
  QProcess* p = process_;
  process_ = nullptr;
  p->disconnect(this);
  if (p->state() != QProcess::NotRunning) {
    p->kill();
    p->waitForFinished(1000);
  }
  p->deleteLater();
}

void LayoutEngine::setBusy(bool busy) {
  if (busy_ == busy) return;
  busy_ = busy;
  emit busyChanged(busy);
}

void LayoutEngine::fail(const QString& message) {
  const quint64 id = currentId_;
  stopProcess();
  setBusy(false);
  emit failed(id, message);
}

void LayoutEngine::onProcessError(QProcess::ProcessError error) {
  if (error == QProcess::FailedToStart)
    fail(tr("Graphviz's '%1' could not be started (is the graphviz package installed?)")
             .arg(dotProgram_));
  else if (error == QProcess::Crashed)
    fail(tr("Graphviz's '%1' crashed while laying out the graph").arg(dotProgram_));
}

void LayoutEngine::onTimeout() {
  fail(tr("the layout took longer than %1 s and was stopped; collapse some modules and retry")
           .arg(timeLimitMs_ / 1000.0, 0, 'f', 1));
}

void LayoutEngine::onProcessFinished(int exitCode, QProcess::ExitStatus status) {
  if (!process_) return;
  timeout_.stop();
  lastDotMs_ = QDateTime::currentMSecsSinceEpoch() - startedAtMs_;
  stdout_ = process_->readAllStandardOutput();
  const QByteArray err = process_->readAllStandardError();
  process_->deleteLater();
  process_ = nullptr;
  if (status != QProcess::NormalExit || exitCode != 0) {
    fail(tr("Graphviz's '%1' failed (exit code %2): %3")
             .arg(dotProgram_)
             .arg(exitCode)
             .arg(QString::fromLocal8Bit(err).trimmed()));
    return;
  }
  if (QString path = diskPath(currentKey_); !path.isEmpty()) {
    QDir().mkpath(cacheDir_);
    QSaveFile f(path);
    if (f.open(QIODevice::WriteOnly)) {
      f.write(stdout_);
      f.commit();  // a cache that cannot be written is only slower next time
    }
  }
  finishParse();
}

// Parsing a large layout takes tens of milliseconds: do it off the UI thread.
void LayoutEngine::finishParse() {
  const quint64 id = currentId_;
  const QByteArray key = currentKey_;
  auto* watcher = new QFutureWatcher<ParseOutcome>(this);
  connect(watcher, &QFutureWatcher<ParseOutcome>::finished, this, [this, watcher, id, key] {
    watcher->deleteLater();
    if (id != currentId_) return;
    ParseOutcome out = watcher->result();
    if (!out.result) {
      fail(out.error);
      return;
    }
    LayoutResultPtr result = out.result;
    cache_.insert(key, result);
    setBusy(false);
    emit finished(id, result);
  });
  watcher->setFuture(QtConcurrent::run(workPool(), parseOutcome, stdout_, currentGraph_));
  stdout_.clear();
}

}  // namespace ckpt::ui
