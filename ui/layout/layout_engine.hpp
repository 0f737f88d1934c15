#pragma once

// Runs Graphviz's `dot -Tjson0` out of process (QProcess): a slow layout can be cancelled or
// time out, and a Graphviz crash cannot take the app down. Results are cached by the DOT text
// (so per model and expansion state), in memory and on disk.

#include <QByteArray>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QTimer>
#include <memory>

#include "ui/layout/layout_types.hpp"

namespace ckpt::ui {

using LayoutResultPtr = std::shared_ptr<const LayoutResult>;

class LayoutEngine : public QObject {
  Q_OBJECT

 public:
  explicit LayoutEngine(QObject* parent = nullptr);
  ~LayoutEngine() override;

  void setTimeLimitMs(int ms) { timeLimitMs_ = ms; }
  int timeLimitMs() const { return timeLimitMs_; }
  void setDotProgram(const QString& program) { dotProgram_ = program; }
  // Directory for the on-disk cache; empty disables it.
  void setCacheDirectory(const QString& dir) { cacheDir_ = dir; }

  // Lays out `graph`, superseding (and killing) any layout in progress. The answer comes as
  // finished() or failed() with the returned id, never synchronously.
  quint64 request(const LayoutGraph& graph);
  void cancel();
  bool busy() const { return busy_; }
  // Wall time of the last layout that ran dot (ms), or 0 for a cache hit.
  qint64 lastDotMs() const { return lastDotMs_; }

 signals:
  void busyChanged(bool busy);
  void finished(quint64 id, ckpt::ui::LayoutResultPtr result);
  void failed(quint64 id, const QString& message);

 private:
  void onProcessFinished(int exitCode, QProcess::ExitStatus status);
  void onProcessError(QProcess::ProcessError error);
  void onTimeout();
  void finishParse();
  void stopProcess();
  void setBusy(bool busy);
  void fail(const QString& message);
  QString diskPath(const QByteArray& key) const;

  QString dotProgram_ = QStringLiteral("dot");
  QString cacheDir_;
  int timeLimitMs_ = 60000;
  quint64 nextId_ = 0;
  quint64 currentId_ = 0;
  bool busy_ = false;
  qint64 lastDotMs_ = 0;
  qint64 startedAtMs_ = 0;

  QPointer<QProcess> process_;
  QTimer timeout_;
  QByteArray currentKey_;
  std::shared_ptr<const LayoutGraph> currentGraph_;
  QByteArray stdout_;
  QHash<QByteArray, LayoutResultPtr> cache_;
};

}  // namespace ckpt::ui
