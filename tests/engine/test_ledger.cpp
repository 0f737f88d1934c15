#include <QtTest>

#include "engine/ops/ops.hpp"

using namespace ckpt;

namespace {
struct Collector : RunListener {
  std::vector<RunEvent> events;
  void on_event(const RunEvent& e) override { events.push_back(e); }
};
}  // namespace

class TestLedger : public QObject {
  Q_OBJECT
 private slots:
  void exactBytesAndPeak() {
    auto ledger = std::make_shared<MemoryLedger>();
    LedgerScope scope(ledger);
    {
      Tensor a = Tensor::zeros({10, 10});         // 400
      Tensor b = Tensor::zeros({5}, DType::f64);  // 40
      QCOMPARE(ledger->live_bytes(), 440);
      {
        Tensor c = add(a, a);
        QCOMPARE(ledger->live_bytes(), 840);
      }
      QCOMPARE(ledger->live_bytes(), 440);
      QCOMPARE(ledger->peak_bytes(), 840);
    }
    QCOMPARE(ledger->live_bytes(), 0);
    QCOMPARE(ledger->live_allocations(), 0);
  }

  void savedTensorsBecomeActivationsAndAreReleasedByBackward() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    PhaseScope fwd(Phase::forward);
    Tensor x;
    {
      CategoryScope as_input(MemoryCategory::input);
      x = Tensor::ones({4, 5});  // 80 bytes
    }
    x.set_requires_grad(true);
    Tensor loss;
    {
      Tensor h = relu(x);  // saves its result: 80 bytes of activation
      Tensor e = exp(h);   // saves its result: 80 more
      loss = sum(e);       // saves nothing
    }
    QCOMPARE(ledger->live_bytes(MemoryCategory::input), 80);
    QCOMPARE(ledger->live_bytes(MemoryCategory::activation), 160);
    QCOMPARE(ledger->live_bytes(MemoryCategory::temporary), 4);  // the loss
    loss.backward();
    // The graph's saved tensors are gone the moment backward has used them.
    QCOMPARE(ledger->live_bytes(MemoryCategory::activation), 0);
    QCOMPARE(ledger->live_bytes(MemoryCategory::gradient), 80);
    loss = Tensor();
    QCOMPARE(ledger->live_bytes(), 160);  // x and x.grad
  }

  void droppingAGraphFreesEverything() {
    auto ledger = std::make_shared<MemoryLedger>();
    LedgerScope scope(ledger);
    Tensor w = Tensor::ones({8, 8});
    w.set_requires_grad(true);
    const auto base = ledger->live_bytes();
    {
      Tensor y = w;
      for (int i = 0; i < 20000; ++i) y = tanh(y);  // deep chain: freed without recursion
      QVERIFY(ledger->live_bytes() > base);
    }
    QCOMPARE(ledger->live_bytes(), base);
  }

  void capIsAClearError() {
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    ledger->set_cap(1000);
    Tensor a = Tensor::zeros({100});
    try {
      Tensor b = add(a, a);
      Tensor c = add(b, a);
      QFAIL("expected the cap to be hit");
    } catch (const std::runtime_error& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("memory cap exceeded"), e.what());
      QVERIFY2(msg.contains("add"), e.what());
      QVERIFY2(msg.contains("1000"), e.what());
    }
    QCOMPARE(ledger->live_bytes(), 400);
  }

  void eventsCarryStepOpPhaseAndCategory() {
    auto ledger = std::make_shared<MemoryLedger>();
    Collector c;
    ExecutionScope scope(ledger);
    ExecutionContext& context = scope.context();
    context.add_listener(&c);
    PhaseScope fwd(Phase::forward);
    Tensor x = Tensor::ones({3});
    x.set_requires_grad(true);
    Tensor y = sigmoid(x);
    context.remove_listener(&c);
    // input alloc (outside a step), then one step: begin, alloc, recategorize, end.
    QCOMPARE(int(c.events.size()), 5);
    QVERIFY(c.events[0].kind == RunEvent::Kind::alloc);
    QCOMPARE(c.events[0].step, -1);
    QVERIFY(c.events[1].kind == RunEvent::Kind::step_begin);
    QCOMPARE(context.label(c.events[1].op), std::string("sigmoid"));
    QVERIFY(c.events[2].kind == RunEvent::Kind::alloc);
    QCOMPARE(c.events[2].bytes, 12);
    QVERIFY(c.events[2].category == MemoryCategory::temporary);
    QVERIFY(c.events[3].kind == RunEvent::Kind::recategorize);
    QVERIFY(c.events[3].category == MemoryCategory::activation);
    QVERIFY(c.events[4].kind == RunEvent::Kind::step_end);
  }
};

QTEST_APPLESS_MAIN(TestLedger)
#include "test_ledger.moc"
