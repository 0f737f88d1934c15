// Every character outside ASCII that the window's strings use (tr("...") in ui/ and app/) is drawn
// by some installed font: a character no font has shows as a box (the toolbar's "⏳ running…"
// did, under Xvfb). The strings are read from the sources, so a new one is checked too.
#include <QDirIterator>
#include <QFile>
#include <QFontDatabase>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QRegularExpression>
#include <QtTest>

namespace {

QString sourceDir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

// The character and the places it is used, e.g. "ui/app/main_window_run.cpp:91".
std::map<char32_t, QStringList> nonAsciiInTranslatedStrings() {
  std::map<char32_t, QStringList> used;
  // tr("...") and its text; moc reads this file, and cannot read a raw string literal here.
  static const QRegularExpression literal("tr\\(\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
  for (const char* folder : {"ui", "app"}) {
    QDirIterator it(sourceDir() + "/" + folder, {"*.cpp", "*.hpp"}, QDir::Files,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
      const QString path = it.next();
      QFile f(path);
      if (!f.open(QIODevice::ReadOnly)) continue;
      const QStringList lines = QString::fromUtf8(f.readAll()).split('\n');
      for (qsizetype i = 0; i < lines.size(); ++i) {
        auto m = literal.globalMatch(lines[i]);
        while (m.hasNext()) {
          for (const char32_t c : m.next().captured(1).toUcs4())
            if (c > 0x7e)
              used[c].append(QDir(sourceDir()).relativeFilePath(path) + ":" +
                             QString::number(i + 1));
        }
      }
    }
  }
  return used;
}

bool someFontHas(char32_t c) {
  if (QFontMetrics(QGuiApplication::font()).inFontUcs4(c)) return true;
  for (const QString& family : QFontDatabase::families())
    if (QFontMetrics(QFont(family)).inFontUcs4(c)) return true;
  return false;
}

}  // namespace

class TestGlyphs : public QObject {
  Q_OBJECT
 private slots:
  void everyCharacterOfTheWindowsStringsHasAGlyph() {
    QVERIFY2(!sourceDir().isEmpty(), "CKPTLAB_SOURCE_DIR is not set");
    QVERIFY2(!QFontDatabase::families().isEmpty(), "no font is installed");
    const auto used = nonAsciiInTranslatedStrings();
    QVERIFY2(!used.empty(), "no string outside ASCII was found: the scan reads nothing");
    QStringList missing;
    for (const auto& [c, where] : used)
      if (!someFontHas(c))
        missing << QStringLiteral("U+%1 '%2' (%3)")
                       .arg(static_cast<uint>(c), 4, 16, QLatin1Char('0'))
                       .arg(QString::fromUcs4(&c, 1), where.join(", "));
    QVERIFY2(missing.isEmpty(), qPrintable("no installed font draws: " + missing.join("; ")));
  }
};

QTEST_MAIN(TestGlyphs)
#include "test_glyphs.moc"
