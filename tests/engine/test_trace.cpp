#include <QtTest>

#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "engine/autograd/execution_context.hpp"
#include "engine/ops/ops.hpp"
#include "engine/trace/export.hpp"
#include "engine/trace/trace.hpp"

using namespace ckpt;

namespace {

// What the ledger itself says is live after each step (taken when the next step begins, so
// that frees between two ops count for the step before, as in the trace).
struct LiveProbe : RunListener {
  MemoryLedger* ledger = nullptr;
  std::vector<CategoryBytes> after_step;
  CategoryBytes before_first{};
  bool started = false;
  void on_event(const RunEvent& e) override {
    if (e.kind != RunEvent::Kind::step_begin) return;
    if (started)
      after_step.push_back(ledger->live_by_category());
    else
      before_first = ledger->live_by_category();
    started = true;
  }
};

void tag(const Tensor& t, const std::string& name) {
  t.storage()->ledger().tag(t.storage()->id(), name);
}

std::int64_t total(const CategoryBytes& b) {
  return std::accumulate(b.begin(), b.end(), std::int64_t{0});
}

Tensor input(const Shape& shape, double value) {
  CategoryScope as_input(MemoryCategory::input);
  return Tensor::full(shape, value);
}

}  // namespace

class TestTrace : public QObject {
  Q_OBJECT
 private slots:
  // A context that starts from a compiled model's label table: the table's names keep the
  // table's ids, names new to the run get ids past it, and every id reads back its name
  // (through the recent-label cache too).
  void contextLabelsStartFromAKnownTable() {
    auto table = std::make_shared<LabelTable>();
    const LabelId conv = table->intern("features.conv0");
    const LabelId out = table->intern("features.conv0.out");
    QCOMPARE(table->intern("features.conv0"), conv);
    QCOMPARE(table->find("absent"), kNoLabel);
    ExecutionContext context(std::make_shared<MemoryLedger>(), table);
    QCOMPARE(context.known_labels(), table.get());
    const std::string name = "features.conv0";
    QCOMPARE(context.intern(name), conv);
    QCOMPARE(context.intern(name), conv);  // the recent-label cache
    QCOMPARE(context.intern("features.conv0.out"), out);
    QCOMPARE(context.intern(""), LabelId{0});
    const LabelId fresh = context.intern("ConvolutionBackward0");
    QVERIFY(fresh >= table->size());
    QCOMPARE(context.intern("ConvolutionBackward0"), fresh);
    const LabelId second = context.intern("AddBackward0");
    QCOMPARE(second, fresh + 1);
    QCOMPARE(context.label(conv), std::string("features.conv0"));
    QCOMPARE(context.label(out), std::string("features.conv0.out"));
    QCOMPARE(context.label(fresh), std::string("ConvolutionBackward0"));
    QCOMPARE(context.label(second), std::string("AddBackward0"));
    QCOMPARE(context.label(0), std::string());
    // The table is shared, never written by a run.
    QCOMPARE(table->find("ConvolutionBackward0"), kNoLabel);
    // A context without a table numbers from the empty string as before.
    ExecutionContext plain(std::make_shared<MemoryLedger>());
    QCOMPARE(plain.intern("features.conv0"), LabelId{1});
    QCOMPARE(plain.label(1), std::string("features.conv0"));
  }

  void memoryCurveEqualsLedgerAtEveryStep() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Tensor w;
    {
      CategoryScope as_param(MemoryCategory::parameter);
      w = Tensor::full({16}, 0.5).set_requires_grad(true);  // before the recorder attaches
    }
    Recorder recorder(scope.context());
    LiveProbe probe;
    probe.ledger = ledger.get();
    scope.context().add_listener(&probe);
    {
      PhaseScope fwd(Phase::forward);
      Tensor x = input({16}, 0.1);
      Tensor y = x;
      // Enough steps to cross several snapshots, with ops that save and ops that do not.
      for (int i = 0; i < 150; ++i) {
        y = i % 3 == 0 ? sin(y) : add(y, w);
        if (i % 7 == 0) {
          y = reshape(y, {4, 4});
          y = reshape(y, {16});
        }
        if (i == 70) {
          scope.context().mark_checkpoint(true, "seg");
          NoGradGuard no_grad;
          Tensor keep = y;
          for (int j = 0; j < 10; ++j) y = tanh(y);
          scope.context().mark_checkpoint(false, "seg");
          y = add(y, keep);
        }
      }
      Tensor loss = sum(y);
      loss.backward();
    }
    probe.after_step.push_back(ledger->live_by_category());
    scope.context().remove_listener(&probe);
    Trace trace = recorder.finish();

    QCOMPARE(static_cast<std::size_t>(trace.step_count()), probe.after_step.size());
    QVERIFY(trace.step_count() > 3 * 64);
    QCOMPARE(trace.memory_at(-1), probe.before_first);
    QCOMPARE(trace.initial_memory()[static_cast<std::size_t>(MemoryCategory::parameter)], 64);
    for (std::int64_t k = 0; k < trace.step_count(); ++k) {
      const auto& expected = probe.after_step[static_cast<std::size_t>(k)];
      if (trace.memory_at(k) != expected) QFAIL(qPrintable(QString("step %1 differs").arg(k)));
      QCOMPARE(trace.total_at(k), total(expected));
    }
    // Replaying the raw events gives the same curve.
    CategoryBytes replay = trace.initial_memory();
    for (std::int64_t k = -1; k < trace.step_count(); ++k) {
      for (auto i = trace.first_event(k); i < trace.first_event(k + 1); ++i) {
        const TraceEvent e = trace.event(i);
        QCOMPARE(e.step, k);
        auto& c = replay[static_cast<std::size_t>(e.category)];
        if (e.kind == TraceEventKind::alloc) c += e.bytes;
        if (e.kind == TraceEventKind::free) c -= e.bytes;
        if (e.kind == TraceEventKind::recategorize) {
          replay[static_cast<std::size_t>(e.previous)] -= e.bytes;
          c += e.bytes;
        }
      }
      QCOMPARE(replay, trace.memory_at(k));
    }
    QCOMPARE(trace.peak().bytes, ledger->peak_bytes());
    QCOMPARE(total(trace.peak().by_category), trace.peak().bytes);
    const auto counts = trace.counts();
    QCOMPARE(counts.forward + counts.backward + counts.recompute, trace.step_count());
    QVERIFY(counts.backward > 0);
    QCOMPARE(trace.step(trace.forward_end()).phase, Phase::forward);
    QCOMPARE(trace.step(trace.forward_end() + 1).phase, Phase::backward);
    for (std::int64_t k = 0; k < trace.step_count(); ++k)
      QCOMPARE(trace.step_phase(k), trace.step(k).phase);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, trace.step_phase(trace.step_count()));
    QCOMPARE(trace.checkpoints().size(), std::size_t{1});
    QCOMPARE(trace.checkpoints()[0].end_step - trace.checkpoints()[0].begin_step, 10);
    QCOMPARE(trace.step(trace.checkpoints()[0].begin_step).segment, std::string("seg"));
    QVERIFY(trace.memory_footprint() > 0);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, trace.memory_at(trace.step_count()));
  }

  void activationStatesOnAHandMadeRun() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Recorder recorder(scope.context());
    Tensor x = input({2, 3}, 0.3).set_requires_grad(true);
    tag(x, "x");
    PhaseScope fwd(Phase::forward);
    Tensor h = exp(x);  // step 0
    tag(h, "h");
    Tensor hv = reshape(h, {6});  // step 1: a view, the same allocation
    tag(hv, "h_view");
    const std::int64_t segment_start = scope.context().steps();
    scope.context().mark_checkpoint(true, "block");
    h.storage()->ledger().recategorize(h.storage()->id(), MemoryCategory::checkpoint_input);
    Tensor b;
    {
      NoGradGuard no_grad;
      Tensor a = sin(hv);  // step 2
      tag(a, "a");
      b = exp(a);  // step 3; a is released when this scope closes
      tag(b, "b");
    }
    scope.context().mark_checkpoint(false, "block");
    Tensor c = add(b, 1.0);  // step 4
    tag(c, "c");
    b = Tensor();  // b is released outside the segment but made inside: dropped as well
    {
      PhaseScope rec(Phase::recompute);
      scope.context().mark_recompute(true, "block");
      Tensor a2 = sin(hv);  // step 5
      tag(a2, "a");
      scope.context().mark_recompute(false, "block");
    }  // a2 released: freed
    {
      PhaseScope bwd(Phase::backward);
      OpScope op("SomethingBackward0");  // step 6
      h = Tensor();
      hv = Tensor();
    }
    Trace trace = recorder.finish();
    QCOMPARE(segment_start, 2);
    QCOMPARE(trace.step_count(), 7);
    auto state = [&](const char* name, std::int64_t k) {
      const auto i = trace.tensor_index(name);
      if (i < 0) throw std::runtime_error(std::string("no tensor ") + name);
      return trace.state_at(i, k);
    };
    QCOMPARE(trace.tensor_index("nope"), -1);
    QCOMPARE(state("h", -1), ActivationState::pending);
    QCOMPARE(state("h", 0), ActivationState::kept);
    QCOMPARE(state("h", 1), ActivationState::checkpoint_input);  // saved at the boundary
    QCOMPARE(state("h_view", 1), ActivationState::checkpoint_input);
    QCOMPARE(state("h", 5), ActivationState::checkpoint_input);
    QCOMPARE(state("h", 6), ActivationState::freed);
    QCOMPARE(state("h_view", 6), ActivationState::freed);
    QCOMPARE(state("a", 1), ActivationState::pending);
    QCOMPARE(state("a", 2), ActivationState::kept);
    QCOMPARE(state("a", 3), ActivationState::dropped);
    QCOMPARE(state("a", 4), ActivationState::dropped);
    QCOMPARE(state("a", 5), ActivationState::freed);  // recomputed and released in step 5
    QCOMPARE(state("b", 3), ActivationState::kept);
    QCOMPARE(state("b", 4), ActivationState::dropped);
    QCOMPARE(state("c", 4), ActivationState::kept);
    QCOMPARE(state("c", 6), ActivationState::kept);
    QCOMPARE(state("x", 6), ActivationState::kept);  // tagged before the first step
    const auto& a = trace.tensors()[static_cast<std::size_t>(trace.tensor_index("a"))];
    QCOMPARE(a.transitions.size(), std::size_t{3});  // kept, dropped, then freed
    QCOMPARE(a.bytes, 24);
    const auto& hl = trace.tensors()[static_cast<std::size_t>(trace.tensor_index("h"))];
    QCOMPARE(hl.saved_at_step, 0);  // exp saves its result
    QCOMPARE(hl.saved_by_op, std::string("exp"));
    QCOMPARE(trace.recomputes().size(), std::size_t{1});
    QCOMPARE(trace.recomputes()[0].begin_step, 5);
    QCOMPARE(trace.recomputes()[0].end_step, 6);
    QCOMPARE(trace.step(5).segment, std::string("block"));
    QCOMPARE(trace.step(5).phase, Phase::recompute);
    QCOMPARE(trace.counts().recompute, 1);
    QCOMPARE(trace.checkpoints()[0].begin_step, 2);
    QCOMPARE(trace.checkpoints()[0].end_step, 4);
  }

  void recomputedStateWhileAlive() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Recorder recorder(scope.context());
    Tensor x = input({4}, 1.0);
    Tensor again;
    {
      PhaseScope fwd(Phase::forward);
      scope.context().mark_checkpoint(true, "s");
      Tensor y = exp(x);
      tag(y, "y");
      scope.context().mark_checkpoint(false, "s");
    }
    {
      PhaseScope rec(Phase::recompute);
      again = exp(x);
      tag(again, "y");
    }
    Trace trace = recorder.finish();
    const auto y = trace.tensor_index("y");
    QCOMPARE(trace.state_at(y, 0), ActivationState::dropped);
    QCOMPARE(trace.state_at(y, 1), ActivationState::recomputed);
  }

  void exportsParse() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Recorder recorder(scope.context());
    {
      Tensor w = input({3}, 2.0).set_requires_grad(true);
      PhaseScope fwd(Phase::forward);
      scope.context().mark_checkpoint(true, "seg \"one\"");
      Tensor y = mul(w, w);
      tag(y, "y");
      scope.context().mark_checkpoint(false, "seg \"one\"");
      warn("a warning, with \"quotes\"\nand a newline");
      sum(y).backward();
    }
    Trace trace = recorder.finish();
    std::ostringstream chrome;
    write_chrome_trace(trace, chrome);
    const auto doc = nlohmann::json::parse(chrome.str());
    std::set<std::string> threads, counters;
    int slices = 0, instants = 0;
    for (const auto& e : doc.at("traceEvents")) {
      const auto ph = e.at("ph").get<std::string>();
      if (ph == "M" && e.at("name") == "thread_name")
        threads.insert(e.at("args").at("name").get<std::string>());
      if (ph == "C") counters.insert(e.at("name").get<std::string>());
      if (ph == "X" && e.at("cat") != "checkpoint" && e.at("cat") != "recompute") ++slices;
      if (ph == "i") ++instants;
    }
    QVERIFY(threads.count("forward") && threads.count("backward") && threads.count("recompute"));
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
      QVERIFY(
          counters.count(std::string("memory: ") + category_name(static_cast<MemoryCategory>(c))));
    QCOMPARE(slices, trace.step_count());
    QCOMPARE(instants, 1);

    std::ostringstream json;
    write_trace_json(trace, json);
    const auto j = nlohmann::json::parse(json.str());
    QCOMPARE(j.at("steps").size(), static_cast<std::size_t>(trace.step_count()));
    QCOMPARE(j.at("events").size(), static_cast<std::size_t>(trace.event_count()));
    QCOMPARE(j.at("messages").at(0).at("text").get<std::string>(),
             std::string("a warning, with \"quotes\"\nand a newline"));
    QCOMPARE(j.at("checkpoints").at(0).at("segment").get<std::string>(),
             std::string("seg \"one\""));
    const auto last = trace.step_count() - 1;
    QCOMPARE(j.at("steps").at(last).at("total").get<std::int64_t>(), trace.total_at(last));
    QCOMPARE(j.at("tensors").at(0).at("name").get<std::string>(), std::string("y"));

    std::ostringstream csv;
    write_memory_csv(trace, csv);
    const auto text = csv.str();
    QCOMPARE(std::count(text.begin(), text.end(), '\n'), trace.step_count() + 2);
    QVERIFY(text.rfind("step,phase,op,node,total,parameter,", 0) == 0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trace_format_from_name("xml"));
  }

  void traceOfAFailedRunExports() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    ledger->set_cap(2000);
    Recorder recorder(scope.context());
    bool failed = false;
    try {
      PhaseScope fwd(Phase::forward);
      scope.context().mark_checkpoint(true, "doomed");
      Tensor x = input({100}, 1.0);
      std::vector<Tensor> keep;
      for (int i = 0; i < 10; ++i) keep.push_back(exp(x));
    } catch (const std::runtime_error& e) {
      failed = std::string(e.what()).find("memory cap exceeded") != std::string::npos;
      scope.context().message(Severity::error, e.what());
    }
    QVERIFY(failed);
    Trace trace = recorder.finish();
    QVERIFY(trace.step_count() >= 1);
    QCOMPARE(trace.checkpoints().size(), std::size_t{1});  // closed at the end
    QCOMPARE(trace.messages().back().severity, Severity::error);
    std::ostringstream chrome, json;
    write_chrome_trace(trace, chrome);
    write_trace_json(trace, json);
    QVERIFY(!nlohmann::json::parse(chrome.str()).at("traceEvents").empty());
    QVERIFY(nlohmann::json::parse(json.str()).at("summary").at("steps").get<int>() >= 1);
  }
};

QTEST_GUILESS_MAIN(TestTrace)
#include "test_trace.moc"
