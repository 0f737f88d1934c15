#pragma once

// ckptlab-cli run as a user runs it: a process (CKPTLAB_CLI, set by CTest), its exit code and
// its two output streams. Shared by the CLI tests.

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>
#include <QtDebug>

namespace ckpt::test {

struct CliResult {
  int code = -1;  // -1: did not finish in time; -2: crashed
  QString out;
  QString err;
};

inline CliResult run_cli(const QStringList& args, int timeout_ms = 300000) {
  QProcess p;
  p.start(qEnvironmentVariable("CKPTLAB_CLI"), args);
  CliResult r;
  if (!p.waitForFinished(timeout_ms)) return r;
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

inline QJsonObject json_object(const QString& text) {
  QJsonParseError e;
  const auto doc = QJsonDocument::fromJson(text.toUtf8(), &e);
  if (e.error != QJsonParseError::NoError) qWarning() << e.errorString() << text.left(400);
  return doc.object();
}

}  // namespace ckpt::test
