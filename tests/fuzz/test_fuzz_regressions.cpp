// Every input the fuzzers found a crash, leak, hang or out-of-memory with (tests/fuzz/
// regressions/<target>/), replayed through the same entry in the ordinary build: each must now
// be accepted or rejected with a named error (an entry aborts otherwise).
#include <QtTest>

#include <QDir>
#include <QFile>

#include "tests/fuzz/fuzz_entries.hpp"

using namespace ckpt;

class TestFuzzRegressions : public QObject {
  Q_OBJECT
 private slots:
  void replay_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("file");
    const QString root = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/fuzz/regressions";
    int rows = 0;
    for (const auto& t : fuzz::targets()) {
      const QDir dir(root + "/" + t.name);
      for (const QString& f : dir.entryList(QDir::Files, QDir::Name)) {
        QTest::newRow(qPrintable(QString(t.name) + "/" + f)) << QString(t.name) << dir.filePath(f);
        ++rows;
      }
    }
    QVERIFY2(rows > 0, qPrintable("no regression inputs under " + root));
  }
  void replay() {
    QFETCH(QString, target);
    QFETCH(QString, file);
    QFile in(file);
    QVERIFY2(in.open(QIODevice::ReadOnly), qPrintable(file));
    const QByteArray bytes = in.readAll();
    for (const auto& t : fuzz::targets())
      if (target == t.name)
        t.entry(reinterpret_cast<const std::uint8_t*>(bytes.constData()),
                static_cast<std::size_t>(bytes.size()));
  }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "test_fuzz_regressions.moc"
