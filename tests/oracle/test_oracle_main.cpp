#include <QTemporaryDir>
#include <QtTest>

#include "support/oracle_harness.hpp"

// The oracle test runner: PyTorch runs every Python case of the C++ cases linked into this
// executable (once, in initTestCase), then each case is one data row. Set
// CKPTLAB_ORACLE_KEEP=1 to keep the PyTorch results for inspection.
class TestOracle : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    if (qEnvironmentVariableIsSet("CKPTLAB_ORACLE_KEEP")) {
      dir_.setAutoRemove(false);
      qInfo("PyTorch results kept in %s", qPrintable(dir_.path()));
    }
    std::vector<std::string> families;
    for (const auto& [name, fn] : ckpt::oracle::registry()) families.push_back(name);
    QVERIFY(!families.empty());
    try {
      names_ = ckpt::oracle::run_python(dir_.path().toStdString(), families);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  void cases_data() {
    QTest::addColumn<QString>("name");
    for (const auto& n : names_) QTest::newRow(n.c_str()) << QString::fromStdString(n);
  }

  void cases() {
    QFETCH(QString, name);
    const auto r = ckpt::oracle::run_case(name.toStdString(), dir_.path().toStdString());
    if (r.ok())
      qInfo("%s: saved for backward %lld bytes (PyTorch %lld)", qPrintable(name),
            static_cast<long long>(r.ours_saved_bytes),
            static_cast<long long>(r.torch_saved_bytes));
    QVERIFY2(r.ok(), r.message().c_str());
  }

 private:
  QTemporaryDir dir_;
  std::vector<std::string> names_;
};

QTEST_GUILESS_MAIN(TestOracle)
#include "test_oracle_main.moc"
