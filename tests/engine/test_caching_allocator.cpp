// Issue 26: the simulation of PyTorch's CUDA caching allocator (engine/trace/caching_allocator)
// on hand-made allocation sequences, each against the rule of c10/cuda/CUDACachingAllocator.cpp
// it exercises, and on the alloc/free events of the oracle's four snapshots (data/, taken from
// docs/reference/gpu-oracle.md; snapshots in tests/engine/data/snapshots), whose reserved bytes and
// segments it must give exactly.
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "engine/trace/caching_allocator.hpp"

using namespace ckpt;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

}  // namespace

class CachingAllocatorTest : public QObject {
  Q_OBJECT

 private slots:
  // The example: the same tensors in two orders reserve twice as much, since cached
  // 16 MiB segments never merge into a 32 MiB one, while a cached 32 MiB block splits in two.
  void orderDecidesReserved() {
    CachingAllocator a;
    std::vector<CachingAllocator::Handle> small;
    for (int i = 0; i < 8; ++i) small.push_back(a.malloc(16 * kMiB));
    for (auto h : small) a.free(h);
    for (int i = 0; i < 4; ++i) a.malloc(32 * kMiB);
    QCOMPARE(a.peak_reserved(), 256 * kMiB);

    CachingAllocator b;
    std::vector<CachingAllocator::Handle> large;
    for (int i = 0; i < 4; ++i) large.push_back(b.malloc(32 * kMiB));
    for (auto h : large) b.free(h);
    for (int i = 0; i < 8; ++i) b.malloc(16 * kMiB);
    QCOMPARE(b.peak_reserved(), 128 * kMiB);
    QCOMPARE(b.segments(), std::int64_t{4});
  }

  // round_size: 512 B multiples, at least 512.
  void roundsTo512() {
    CachingAllocator a;
    QCOMPARE(a.round_size(1), std::int64_t{512});
    QCOMPARE(a.round_size(512), std::int64_t{512});
    QCOMPARE(a.round_size(513), std::int64_t{1024});
    QCOMPARE(a.round_size(0), std::int64_t{512});
    a.malloc(4);
    QCOMPARE(a.allocated(), std::int64_t{512});
  }

  // get_allocation_size: 2 MiB segments for requests up to 1 MiB, 20 MiB below 10 MiB, larger
  // ones rounded up to 2 MiB.
  void segmentSizes() {
    CachingAllocator a;
    QCOMPARE(a.allocation_size(kMiB), 2 * kMiB);
    QCOMPARE(a.allocation_size(kMiB + 512), 20 * kMiB);
    QCOMPARE(a.allocation_size(10 * kMiB - 512), 20 * kMiB);
    QCOMPARE(a.allocation_size(10 * kMiB), 10 * kMiB);
    QCOMPARE(a.allocation_size(10 * kMiB + 1), 12 * kMiB);
    a.malloc(kMiB);
    QCOMPARE(a.reserved(), 2 * kMiB);
    a.malloc(3 * kMiB);
    QCOMPARE(a.reserved(), 22 * kMiB);
    a.malloc(11 * kMiB);  // the 20 MiB segment's cached 17 MiB serve it
    QCOMPARE(a.reserved(), 22 * kMiB);
    a.malloc(18 * kMiB - 512);  // nothing cached fits: an 18 MiB segment
    QCOMPARE(a.reserved(), 40 * kMiB);
    QCOMPARE(a.segments(), std::int64_t{3});
  }

  // The small pool packs requests into one 2 MiB segment; the large pool never serves them.
  void smallPoolPacks() {
    CachingAllocator a;
    for (int i = 0; i < 4; ++i) a.malloc(512 * 1024);
    QCOMPARE(a.reserved(), 2 * kMiB);
    a.malloc(512);  // the segment is full: a second one
    QCOMPARE(a.reserved(), 4 * kMiB);
    CachingAllocator b;
    const auto big = b.malloc(4 * kMiB);  // a 20 MiB segment, 16 MiB of it cached
    b.free(big);
    b.malloc(kMiB);  // small: a new 2 MiB segment, not the cached large block
    QCOMPARE(b.reserved(), 22 * kMiB);
  }

  // should_split: a large block is split only when more than 1 MiB would remain; the unsplit
  // remainder is allocated with it (torch.cuda.memory_allocated counts it).
  void largeSplitThreshold() {
    CachingAllocator a;
    const auto h = a.malloc(12 * kMiB);  // a 12 MiB segment
    a.free(h);
    a.malloc(11 * kMiB + 512);  // 1 MiB - 512 would remain: not split
    QCOMPARE(a.allocated(), 12 * kMiB);
    CachingAllocator b;
    const auto g = b.malloc(12 * kMiB);
    b.free(g);
    b.malloc(10 * kMiB);  // 2 MiB remain: split
    QCOMPARE(b.allocated(), 10 * kMiB);
    b.malloc(2 * kMiB);  // fits the remainder: no new segment
    QCOMPARE(b.reserved(), 12 * kMiB);
  }

  // get_free_block is best fit: the smallest cached block that fits, not the first.
  void bestFit() {
    CachingAllocator a;
    const auto x = a.malloc(40 * kMiB);
    const auto y = a.malloc(24 * kMiB);
    a.free(x);
    a.free(y);
    a.malloc(24 * kMiB);  // takes the 24 MiB segment
    a.malloc(40 * kMiB);  // the 40 MiB one is still whole
    QCOMPARE(a.reserved(), 64 * kMiB);
  }

  // free_block merges a freed block with its free neighbours in its segment, so the whole
  // segment serves a larger request again; blocks of two segments never merge.
  void mergesWithinSegmentsOnly() {
    CachingAllocator a;
    const auto p = a.malloc(6 * kMiB);  // a 20 MiB segment: 6 allocated, 14 cached
    const auto q = a.malloc(6 * kMiB);  // from the cached 14: 8 remain
    a.free(p);
    a.free(q);  // 6 + 6 + 8 merge back into 20
    a.malloc(20 * kMiB);
    QCOMPARE(a.reserved(), 20 * kMiB);
    CachingAllocator b;
    const auto s1 = b.malloc(12 * kMiB);
    const auto s2 = b.malloc(12 * kMiB);
    b.free(s1);
    b.free(s2);
    b.malloc(24 * kMiB);  // two cached 12 MiB segments are no 24 MiB block
    QCOMPARE(b.reserved(), 48 * kMiB);
  }

  // max_split_size (PYTORCH_CUDA_ALLOC_CONF): blocks at or above it are "oversize": never split,
  // never given to a request below it, and given to a larger request only within 20 MiB.
  void oversizeBlocks() {
    CachingAllocatorRules rules;
    rules.max_split_size = 64 * kMiB;
    CachingAllocator a(rules);
    const auto big = a.malloc(100 * kMiB);
    a.free(big);
    a.malloc(30 * kMiB);  // below max_split_size: the oversize block is not offered
    QCOMPARE(a.reserved(), 130 * kMiB);
    a.malloc(90 * kMiB);  // within 20 MiB of the 100 MiB block: taken whole
    QCOMPARE(a.reserved(), 130 * kMiB);
    QCOMPARE(a.allocated(), 130 * kMiB);
    CachingAllocator b(rules);
    const auto huge = b.malloc(200 * kMiB);
    b.free(huge);
    b.malloc(100 * kMiB);  // 100 MiB more than asked: a segment of its own
    QCOMPARE(b.reserved(), 300 * kMiB);
  }

  // A persistent workspace made in an earlier step sits in a segment of its own.
  void ownSegment() {
    CachingAllocator a;
    a.malloc(kMiB, true);
    a.malloc(kMiB, true);
    QCOMPARE(a.reserved(), 4 * kMiB);
    a.malloc(kMiB);  // fits the first segment's free half
    QCOMPARE(a.reserved(), 4 * kMiB);
  }

  // release_cached_blocks (torch.cuda.empty_cache): every cached whole segment is freed; a
  // segment with a block still allocated stays, its free remainder with it.
  void emptyCacheFreesWholeSegments() {
    CachingAllocator a;
    const auto x = a.malloc(12 * kMiB);
    const auto y = a.malloc(4 * kMiB);  // a 20 MiB segment, 16 MiB of it cached
    const auto z = a.malloc(kMiB);      // a 2 MiB small segment
    a.free(x);
    a.free(z);
    QCOMPARE(a.reserved(), 34 * kMiB);
    a.empty_cache();
    QCOMPARE(a.reserved(), 20 * kMiB);
    QCOMPARE(a.segments(), std::int64_t{1});
    QCOMPARE(a.segments_released(), std::int64_t{2});
    a.free(y);
    a.empty_cache();
    QCOMPARE(a.reserved(), std::int64_t{0});
    QCOMPARE(a.peak_reserved(), 34 * kMiB);  // max_memory_reserved keeps its peak
  }

  // malloc: a cudaMalloc refused beyond the capacity frees the cached segments
  // (release_cached_blocks) and is retried (num_alloc_retries); when nothing cached can make
  // room, torch.cuda.OutOfMemoryError.
  void freeAndRetryBeforeOutOfMemory() {
    CachingAllocatorRules rules;
    rules.capacity = 64 * kMiB;
    CachingAllocator a(rules);
    a.free(a.malloc(40 * kMiB));
    a.malloc(50 * kMiB);  // the cached 40 MiB is too small, and 90 MiB do not fit
    QCOMPARE(a.reserved(), 50 * kMiB);
    QCOMPARE(a.alloc_retries(), std::int64_t{1});
    QVERIFY_THROWS_EXCEPTION(CachingAllocatorOutOfMemory, a.malloc(30 * kMiB));
    CachingAllocator unlimited;
    unlimited.free(unlimited.malloc(40 * kMiB));
    unlimited.malloc(50 * kMiB);
    QCOMPARE(unlimited.reserved(), 90 * kMiB);  // no capacity: nothing is ever given back
    QCOMPARE(unlimited.alloc_retries(), std::int64_t{0});
  }

  // With max_split_size, release_available_cached_blocks first frees only the oversize cached
  // segment that covers the request, keeping the others cached.
  void releasesOversizeBeforeEverything() {
    CachingAllocatorRules rules;
    rules.max_split_size = 32 * kMiB;
    rules.capacity = 120 * kMiB;
    CachingAllocator a(rules);
    const auto big = a.malloc(64 * kMiB);
    const auto mid = a.malloc(24 * kMiB);
    a.free(big);
    a.free(mid);
    a.malloc(40 * kMiB);  // oversize, 24 MiB short of the 64 MiB block: kLargeBuffer is 20
    QCOMPARE(a.reserved(), 64 * kMiB);  // the 64 MiB segment went, the 24 MiB one stays
    QCOMPARE(a.segments_released(), std::int64_t{1});
    QCOMPARE(a.alloc_retries(), std::int64_t{0});
  }

  // garbage_collection_threshold (off by default): above the threshold of the capacity, a
  // cudaMalloc first frees the cached whole large segments at least as old as the average
  // (in get_free_block calls since they were cached) — here the older 24 MiB one only.
  void garbageCollectsOldSegments() {
    for (const double threshold : {0.0, 0.5}) {
      CachingAllocatorRules rules;
      rules.capacity = 100 * kMiB;
      rules.garbage_collection_threshold = threshold;
      CachingAllocator a(rules);
      a.free(a.malloc(24 * kMiB));
      a.free(a.malloc(40 * kMiB));  // the 24 MiB block is too small for it
      a.malloc(60 * kMiB);
      if (threshold > 0) {
        QCOMPARE(a.reserved(), 100 * kMiB);  // 40 cached + 60
        QCOMPARE(a.segments_released(), std::int64_t{1});
        QCOMPARE(a.alloc_retries(), std::int64_t{0});
      } else {
        QCOMPARE(a.reserved(), 60 * kMiB);  // 124 MiB would not fit: everything cached went
        QCOMPARE(a.segments_released(), std::int64_t{2});
        QCOMPARE(a.alloc_retries(), std::int64_t{1});
      }
    }
  }

  // BlockComparatorSize orders by stream first: a block cached by one stream never serves
  // another's request.
  void blocksStayOnTheirStream() {
    CachingAllocator a;
    a.free(a.malloc(12 * kMiB, false, 1));
    a.malloc(12 * kMiB, false, 0);
    QCOMPARE(a.reserved(), 24 * kMiB);
    a.malloc(12 * kMiB, false, 1);
    QCOMPARE(a.reserved(), 24 * kMiB);
  }

  // The allocated figure comes from blocks, not requests: an 11.5 MiB request in a cached
  // 12 MiB block (not split: 0.5 MiB would remain) counts 12 MiB, as AdamW's step shows on the
  // oracle's card; freeing it gives back the whole block.
  void allocatedCountsBlocks() {
    CachingAllocator a;
    a.free(a.malloc(12 * kMiB));
    const auto h = a.malloc(11 * kMiB + kMiB / 2);
    QCOMPARE(a.block_size(h), 12 * kMiB);
    QCOMPARE(a.allocated(), 12 * kMiB);
    QCOMPARE(a.peak_allocated(), 12 * kMiB);
    a.free(h);
    QCOMPARE(a.allocated(), std::int64_t{0});
  }

  // The oracle's four snapshots: their allocs and frees, replayed, give PyTorch's own
  // max_memory_reserved, max_memory_allocated and segment count.
  void snapshotsReplay_data() {
    QTest::addColumn<int>("index");
    for (int i = 0; i < 4; ++i) QTest::newRow(std::to_string(i).c_str()) << i;
  }
  void snapshotsReplay() {
    QFETCH(int, index);
    std::ifstream in(qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString() +
                     "/tests/engine/data/allocator_snapshots.json");
    QVERIFY(in.good());
    const auto j = nlohmann::json::parse(in);
    const auto& c = j.at("cases").at(static_cast<std::size_t>(index));
    CachingAllocator a;
    for (const auto& w : j.at("workspaces")) a.malloc(w.get<std::int64_t>(), true);
    for (const auto& h : c.at("held")) a.malloc(h.get<std::int64_t>());
    std::vector<CachingAllocator::Handle> blocks;
    for (const auto& e : c.at("events")) {
      const auto v = e.get<std::int64_t>();
      if (v >= 0)
        blocks.push_back(a.malloc(v));
      else
        a.free(blocks.at(static_cast<std::size_t>(-v - 1)));
    }
    const std::string name = c.at("case").get<std::string>();
    qInfo("%s: reserved %lld (PyTorch %lld), allocated peak %lld (PyTorch %lld)", name.c_str(),
          static_cast<long long>(a.peak_reserved()), c.at("reserved").get<long long>(),
          static_cast<long long>(a.peak_allocated()), c.at("peak").get<long long>());
    QCOMPARE(a.peak_reserved(), c.at("reserved").get<std::int64_t>());
    QCOMPARE(a.peak_allocated(), c.at("peak").get<std::int64_t>());
    QCOMPARE(a.segments(), c.at("segments").get<std::int64_t>());
  }

  // Over a trace: a CUDA dry run's reserved curve never falls, starts with the workspaces'
  // segments and ends at its peak; the cpu has no caching allocator.
  void overATrace() {
    const auto model =
        load_model(qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString() + "/samples/mlp.json");
    RunRequest c = scenario_request(*model);
    c.settings.dry_run = true;
    c.settings.device = Device::cuda;
    const RunResult r = Runner(model).run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(r.reserved.has_value());
    const ReservedMemory& m = *r.reserved;
    QCOMPARE(m.initial, 68 * kMiB);  // two 32 MiB segments, two 2 MiB ones
    QCOMPARE(m.after_step.size(), static_cast<std::size_t>(r.trace.step_count()));
    for (std::size_t k = 1; k < m.after_step.size(); ++k)
      QVERIFY(m.after_step[k] >= m.after_step[k - 1]);
    QCOMPARE(m.peak_bytes, m.after_step.back());
    QVERIFY(m.peak_bytes >= r.trace.peak().bytes);
    QCOMPARE(m.fragmentation_at_peak, m.reserved_at_allocated_peak - r.trace.peak().bytes);
    c.settings.device = Device::cpu;
    QVERIFY(!Runner(model).run(c).reserved.has_value());
  }
};

QTEST_GUILESS_MAIN(CachingAllocatorTest)
#include "test_caching_allocator.moc"
