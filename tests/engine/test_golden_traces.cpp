// Every sample's trace, in the configurations the other tests run, against committed golden
// summaries: the step sequence (phase, op, node, segment) and the memory events (kind, category,
// bytes) are hashed, with the counts and the peak beside the hash. Refactoring the engine must
// leave them byte-identical; a change of behaviour shows here first and is re-recorded on
// purpose with CKPTLAB_UPDATE_GOLDEN=1.
#include <QtTest>

#include <fstream>
#include <map>
#include <sstream>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "tests/engine/support/sample_configs.hpp"

using namespace ckpt;

namespace {

QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

std::string golden_path() {
  return (source_dir() + "/tests/engine/golden/trace_summaries.txt").toStdString();
}

struct Fnv {
  std::uint64_t h = 1469598103934665603ull;
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  void add(const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    add(s.size());
  }
};

std::string summarize(const Trace& t) {
  Fnv steps, events;
  for (std::int64_t k = 0; k < t.step_count(); ++k) {
    const TraceStep s = t.step(k);
    steps.add(static_cast<std::uint64_t>(s.phase));
    steps.add(s.op);
    steps.add(s.node);
    steps.add(s.segment);
  }
  for (std::int64_t i = 0; i < t.event_count(); ++i) {
    const TraceEvent e = t.event(i);
    events.add(static_cast<std::uint64_t>(e.step));
    events.add(static_cast<std::uint64_t>(e.kind));
    events.add(static_cast<std::uint64_t>(e.category));
    events.add(static_cast<std::uint64_t>(e.previous));
    events.add(static_cast<std::uint64_t>(e.bytes));
  }
  const PeakInfo peak = t.peak();
  const PhaseCounts c = t.counts();
  std::ostringstream o;
  o << "steps=" << t.step_count() << " fwd=" << c.forward << " rec=" << c.recompute
    << " bwd=" << c.backward << " events=" << t.event_count() << " peak=" << peak.bytes << "@"
    << peak.step << " ckpts=" << t.checkpoints().size() << " recomputes=" << t.recomputes().size()
    << " steps#=" << std::hex << steps.h << " events#=" << events.h;
  return o.str();
}

std::map<std::string, std::string> read_golden() {
  std::map<std::string, std::string> g;
  std::ifstream in(golden_path());
  std::string line;
  while (std::getline(in, line)) {
    const auto bar = line.find(" | ");
    if (line.empty() || line[0] == '#' || bar == std::string::npos) continue;
    g[line.substr(0, bar)] = line.substr(bar + 3);
  }
  return g;
}

}  // namespace

class TestGoldenTraces : public QObject {
  Q_OBJECT
 private slots:
  void everySampleMatchesItsGoldenSummary() {
    QVERIFY2(!source_dir().isEmpty(), "run under ctest");
    const QDir dir(source_dir() + "/samples");
    const QStringList files = dir.entryList({"*.json", "*.onnx"}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 12);
    std::map<std::string, std::string> actual;
    for (const QString& f : files) {
      auto model = load_model((dir.path() + "/" + f).toStdString());
      Runner runner(model);
      for (auto [name, config] : test::sample_configurations(*model, f.startsWith("heavy_model"))) {
        // A sample too big for a real run (GPT-2 small) is summarized from its dry run, whose
        // trace is the real run's (test_engine_dry_run).
        config.settings.dry_run = model->scenario.dry_run_only;
        const RunResult r = runner.run(config);
        actual[f.toStdString() + " / " + name] = summarize(r.trace) + (r.ok ? "" : " failed");
      }
    }
    if (qEnvironmentVariableIsSet("CKPTLAB_UPDATE_GOLDEN")) {
      std::ofstream out(golden_path());
      out << "# key | summary; written by test_engine_golden_traces with "
             "CKPTLAB_UPDATE_GOLDEN=1\n";
      for (const auto& [k, v] : actual) out << k << " | " << v << "\n";
      QSKIP("golden summaries rewritten");
    }
    const auto golden = read_golden();
    QVERIFY2(!golden.empty(), "no golden summaries: run with CKPTLAB_UPDATE_GOLDEN=1 once");
    int mismatches = 0;
    for (const auto& [k, v] : actual) {
      auto it = golden.find(k);
      if (it == golden.end()) {
        qWarning("%s: no golden summary", k.c_str());
        ++mismatches;
      } else if (it->second != v) {
        qWarning("%s:\n  golden %s\n  actual %s", k.c_str(), it->second.c_str(), v.c_str());
        ++mismatches;
      }
    }
    QCOMPARE(actual.size(), golden.size());
    QCOMPARE(mismatches, 0);
  }
};

QTEST_GUILESS_MAIN(TestGoldenTraces)
#include "test_golden_traces.moc"
