// The storage pool: freed blocks are reused by size class, the ledger still counts exactly
// what tensors hold, the cache stays under its limit, and concurrent runs share it safely.

#include <QtTest>

#include <thread>

#include "engine/ops/ops.hpp"
#include "engine/tensor/storage_pool.hpp"

using namespace ckpt;

namespace {

struct Delta {
  StoragePoolStats before = storage_pool::stats();
  std::int64_t hits() const { return storage_pool::stats().hits - before.hits; }
  std::int64_t misses() const { return storage_pool::stats().misses - before.misses; }
};

// An MLP step (forward and backward) whose every tensor is at least 4 KiB.
void mlp_step(const Tensor& x, const TensorList& params) {
  Tensor h = x;
  for (std::size_t i = 0; i < params.size(); i += 2) h = relu(linear(h, params[i], params[i + 1]));
  sum(h).backward();
  for (const auto& p : params) const_cast<Tensor&>(p).set_grad(Tensor());
}

TensorList mlp_params(std::int64_t width, int layers) {
  TensorList p;
  for (int i = 0; i < layers; ++i) {
    p.push_back(Tensor::full({width, width}, 0.01));
    p.push_back(Tensor::full({width}, 0.1));
  }
  for (auto& t : p) t.set_requires_grad(true);
  return p;
}

}  // namespace

class TestPool : public QObject {
  Q_OBJECT
 private slots:
  void init() {
    storage_pool::trim();
    storage_pool::set_limit(std::int64_t{256} << 20);
  }
  void cleanupTestCase() { storage_pool::trim(); }

  void classesRoundUpByAtMostAQuarter() {
    QCOMPARE(storage_pool::class_size(0), std::size_t{64});
    QCOMPARE(storage_pool::class_size(1), std::size_t{64});
    QCOMPARE(storage_pool::class_size(65), std::size_t{128});
    QCOMPARE(storage_pool::class_size(513), std::size_t{640});
    QCOMPARE(storage_pool::class_size(std::size_t{4} << 20), std::size_t{4} << 20);
    QCOMPARE(storage_pool::class_size((std::size_t{4} << 20) + 1), std::size_t{5} << 20);
    for (std::size_t b = 1; b < (std::size_t{1} << 26); b = b * 3 + 7) {
      const std::size_t c = storage_pool::class_size(b);
      QVERIFY2(c >= b && 4 * c <= 5 * b + 4 * 64, qPrintable(QString::number(b)));
      QCOMPARE(storage_pool::class_size(c), c);  // a class size is its own class
    }
  }

  void freedBlockIsReusedAndLedgerCountsOnlyLiveBytes() {
    auto ledger = std::make_shared<MemoryLedger>();
    LedgerScope scope(ledger);
    Delta d;
    const void* first = nullptr;
    {
      Tensor a = Tensor::empty({1000, 1000});  // 4,000,000 bytes
      first = a.data<float>();
      QCOMPARE(ledger->live_bytes(), 4'000'000);
    }
    QCOMPARE(ledger->live_bytes(), 0);
    QCOMPARE(ledger->live_allocations(), 0);
    QCOMPARE(storage_pool::stats().cached_blocks, 1);
    QCOMPARE(storage_pool::stats().cached_bytes,
             static_cast<std::int64_t>(storage_pool::class_size(4'000'000)));
    // A different shape of a size in the same class gets the same block back.
    Tensor b = Tensor::empty({3'900'000}, DType::i64);  // 31.2 MB: another class
    Tensor c = Tensor::empty({999, 1001});              // 3,999,996 bytes
    QCOMPARE(c.data<float>(), first);
    QCOMPARE(d.hits(), 1);
    QCOMPARE(d.misses(), 2);
    QCOMPARE(ledger->live_bytes(), 3'999'996 + 31'200'000);
    QCOMPARE(storage_pool::stats().cached_blocks, 0);
  }

  void secondTrainingStepAllocatesNothingNew() {
    auto ledger = std::make_shared<MemoryLedger>();
    LedgerScope scope(ledger);
    const TensorList params = mlp_params(256, 3);
    const Tensor x = Tensor::full({32, 256}, 1.0);
    mlp_step(x, params);
    const std::int64_t peak = ledger->peak_bytes();
    const std::int64_t live = ledger->live_bytes();
    ledger->reset_peak();
    Delta d;
    mlp_step(x, params);
    QCOMPARE(d.misses(), 0);
    QVERIFY(d.hits() > 10);
    // The ledger's figures do not depend on what the pool held.
    QCOMPARE(ledger->peak_bytes(), peak);
    QCOMPARE(ledger->live_bytes(), live);
  }

  void idleBytesStayUnderTheLimit() {
    auto ledger = std::make_shared<MemoryLedger>();
    LedgerScope scope(ledger);
    storage_pool::set_limit(std::int64_t{3} << 20);
    Delta d;
    void* newest = nullptr;
    {
      Tensor a = Tensor::empty({std::int64_t{1} << 18});  // 1 MiB each
      Tensor b = Tensor::empty({std::int64_t{1} << 18});
      Tensor c = Tensor::empty({std::int64_t{1} << 18});
      Tensor e = Tensor::empty({std::int64_t{1} << 18});
      newest = a.data<float>();
    }  // freed e, c, b, a in that order: e is the oldest idle block, evicted by the limit
    const auto s = storage_pool::stats();
    QCOMPARE(s.cached_bytes, std::int64_t{3} << 20);
    QCOMPARE(s.cached_blocks, 3);
    // A block larger than the limit is never cached.
    { Tensor big = Tensor::empty({std::int64_t{1} << 20}); }
    QCOMPARE(storage_pool::stats().cached_bytes, std::int64_t{3} << 20);
    // The most recently freed block is handed out first (still warm in cache).
    Tensor again = Tensor::empty({std::int64_t{1} << 18});
    QCOMPARE(static_cast<void*>(again.data<float>()), newest);
    QCOMPARE(d.hits(), 1);
    storage_pool::set_limit(std::int64_t{1} << 20);
    QCOMPARE(storage_pool::stats().cached_bytes, std::int64_t{1} << 20);
    storage_pool::trim();
    QCOMPARE(storage_pool::stats().cached_bytes, 0);
    QCOMPARE(storage_pool::stats().cached_blocks, 0);
    storage_pool::set_limit(0);  // no caching at all
    { Tensor t = Tensor::empty({100}); }
    QCOMPARE(storage_pool::stats().cached_blocks, 0);
  }

  // Idle blocks of other classes make way for a request none of them serves: in-use plus idle
  // bytes stay within the in-use high-water mark plus max(64 MiB, an eighth of it).
  void aMissReleasesIdleBlocksBeyondTheHighWater() {
    auto ledger = std::make_shared<MemoryLedger>();
    LedgerScope scope(ledger);
    const auto mib = [](std::int64_t n) { return n << 20; };
    const auto footprint = [] {
      const auto s = storage_pool::stats();
      return s.in_use_bytes + s.cached_bytes;
    };
    {
      std::vector<Tensor> blocks;
      for (int i = 0; i < 10; ++i) blocks.push_back(Tensor::empty({mib(8) / 4}));  // 8 MiB each
      QVERIFY(storage_pool::stats().in_use_bytes >= mib(80));
    }
    const std::int64_t high_water = storage_pool::stats().high_water_bytes;
    const std::int64_t slack = std::max(mib(64), high_water / 8);
    QCOMPARE(storage_pool::stats().cached_bytes, mib(80));
    // 100 MiB of another class: the process would hold 180 MiB, past the bound.
    Tensor big = Tensor::empty({mib(100) / 4});
    const std::int64_t bound = std::max(high_water, storage_pool::stats().in_use_bytes) + slack;
    QVERIFY2(footprint() <= bound, qPrintable(QString("%1 > %2").arg(footprint()).arg(bound)));
    QVERIFY(storage_pool::stats().cached_bytes < mib(80));
    QVERIFY(storage_pool::stats().cached_bytes > 0);  // only as many as needed went
    // A request an idle block serves releases nothing.
    const std::int64_t cached = storage_pool::stats().cached_bytes;
    Tensor again = Tensor::empty({mib(8) / 4});
    QCOMPARE(storage_pool::stats().cached_bytes, cached - mib(8));
  }

  // A request takes the smallest idle block that serves it, up to one and a half times its
  // class: a layer's gradient finds its activation's block though their classes differ.
  void aLargerIdleBlockServesUpToOneAndAHalfTimesTheRequest() {
    const auto mib = [](std::int64_t n) { return n << 20; };
    void* block = nullptr;
    {
      Tensor a = Tensor::empty({mib(5) / 4});
      block = a.data<float>();
    }
    Delta d;
    {
      Tensor small = Tensor::empty({mib(3) / 4});  // 5 MiB is more than 1.5 x 3 MiB
      QVERIFY(static_cast<void*>(small.data<float>()) != block);
      QCOMPARE(d.misses(), 1);
    }
    Tensor b = Tensor::empty({mib(4) / 4});
    QCOMPARE(static_cast<void*>(b.data<float>()), block);
    QCOMPARE(d.hits(), 1);
    // Held under its own class: released, it is the 5 MiB block again.
    b = Tensor();
    Tensor c = Tensor::empty({mib(5) / 4});
    QCOMPARE(static_cast<void*>(c.data<float>()), block);
  }

  // By default idle bytes follow the high-water mark: every block of a step that held more
  // than any fixed bound stays for the next step, and in-use plus idle bytes stay within the
  // high water plus its slack. trim() starts the mark afresh.
  void byDefaultAStepsBlocksAllServeTheNextStep() {
    const auto mib = [](std::int64_t n) { return n << 20; };
    storage_pool::set_limit(-1);
    storage_pool::trim();
    const auto step = [&] {
      std::vector<Tensor> blocks;
      for (int i = 0; i < 48; ++i) blocks.push_back(Tensor::empty({mib(12 + i % 3) / 4}));
    };
    step();
    const auto s = storage_pool::stats();
    QVERIFY2(s.cached_bytes >= mib(600), qPrintable(QString::number(s.cached_bytes)));
    QVERIFY(s.cached_bytes + s.in_use_bytes <=
            s.high_water_bytes + std::max(mib(64), s.high_water_bytes / 8));
    Delta d;
    step();
    QCOMPARE(d.misses(), 0);
    QCOMPARE(d.hits(), 48);
    storage_pool::trim();
    QCOMPARE(storage_pool::stats().cached_bytes, 0);
    QCOMPARE(storage_pool::stats().high_water_bytes, storage_pool::stats().in_use_bytes);
  }

  void concurrentRunsShareThePool() {
    constexpr int kThreads = 4, kSteps = 20;
    Delta d;
    std::vector<std::thread> threads;
    std::vector<int> failures(kThreads, 0);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([t, &failures] {
        auto ledger = std::make_shared<MemoryLedger>();
        LedgerScope scope(ledger);
        const std::int64_t width = 64 + 32 * t;
        const TensorList params = mlp_params(width, 2);
        const Tensor x = Tensor::full({16, width}, 0.5);
        const std::int64_t before = ledger->live_bytes();
        std::vector<double> first;
        int& bad = failures[static_cast<std::size_t>(t)];
        for (int s = 0; s < kSteps; ++s) {
          Tensor y = linear(relu(linear(x, params[0], params[1])), params[2], params[3]);
          sum(y).backward();
          // Every step gives the same gradient, whichever blocks it was handed.
          const auto g = params[0].grad().to_vector();
          if (s == 0) first = g;
          if (g != first) ++bad;
          for (const auto& p : params) const_cast<Tensor&>(p).set_grad(Tensor());
        }
        if (ledger->live_bytes() != before) ++bad;
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) QCOMPARE(failures[static_cast<std::size_t>(t)], 0);
    QVERIFY(d.hits() > d.misses());
  }
};

QTEST_APPLESS_MAIN(TestPool)
#include "test_pool.moc"
