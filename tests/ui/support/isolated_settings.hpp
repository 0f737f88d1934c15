#pragma once

// A GUI test's settings and caches in its own temporary home, never the user's: the window
// reads and writes QSettings (window layout, recent files, pins) and caches layouts.

#include <QCoreApplication>
#include <QString>
#include <QTemporaryDir>

namespace ckpt::ui::test {

inline void isolateSettings(const QTemporaryDir& home, const QString& application) {
  qputenv("XDG_CONFIG_HOME", home.filePath(QStringLiteral("config")).toUtf8());
  qputenv("XDG_CACHE_HOME", home.filePath(QStringLiteral("cache")).toUtf8());
  QCoreApplication::setOrganizationName(QStringLiteral("ckptlab-test"));
  QCoreApplication::setApplicationName(application);
}

}  // namespace ckpt::ui::test
