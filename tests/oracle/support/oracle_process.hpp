#pragma once

// The oracle tests' PyTorch half runs as a child process: a script of tests/oracle/ (or
// samples/) under Debian's python3 with torch 1.13, writing into the test's scratch folder.

#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

namespace ckpt::oracle {

inline QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

inline QString python() {
  return qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3");
}

// Runs `python args...`; empty on success, else what it printed (or that it timed out). The
// default timeout stays within a test's 600 s on a busy 2-core machine.
inline QString run_script(const QStringList& args, int timeout_ms = 540000) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(python(), args);
  if (!p.waitForFinished(timeout_ms)) return "timed out: " + args.join(' ');
  if (p.exitCode() != 0) return QString::fromUtf8(p.readAll());
  return {};
}

// A test's scratch folder, kept after the test when CKPTLAB_ORACLE_KEEP is set (to rerun the
// PyTorch half by hand on what the test wrote).
inline bool prepare_scratch(QTemporaryDir& dir) {
  if (qEnvironmentVariableIsSet("CKPTLAB_ORACLE_KEEP")) dir.setAutoRemove(false);
  return dir.isValid();
}

// The cases a script wrote into `dir`: one name a line of its index.txt (empty when absent).
inline QStringList script_cases(const QTemporaryDir& dir) {
  QFile index(dir.filePath("index.txt"));
  if (!index.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(index.readAll()).split('\n', Qt::SkipEmptyParts);
}

}  // namespace ckpt::oracle
