// OpenMP teams: the kernels' threads are the pool libgomp keeps, never threads made per call.
// A parallel region whose `if` clause is false is still a nesting level, and every region
// inside it got a team of newly created threads: at batch 1 on two threads the app's
// DenseNet-121 step took 1.0-1.2 s instead of 0.3 s. The test counts pthread_create calls (this
// executable's definition interposes on libgomp's), so it cannot depend on timing.

#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>

#include <QtTest>

#include <atomic>

#include "engine/kernels/kernels.hpp"
#include "engine/model/loader.hpp"
#include "engine/ops/ops.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/generator.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CKPT_SANITIZED 1  // the sanitizers' runtimes intercept pthread_create themselves
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CKPT_SANITIZED 1
#endif
#endif

namespace {
std::atomic<int> g_threads_created{0};
}  // namespace

#ifndef CKPT_SANITIZED
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  ++g_threads_created;
  return real(thread, attr, start, arg);
}
#endif

using namespace ckpt;

namespace {

Tensor random(const Shape& shape, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(gen.normal());
  return Tensor::from_vector(v, shape);
}

// Threads created by `work` after it ran once (which may fill libgomp's pool).
template <typename F>
int threads_created_after_warm_up(F&& work) {
  work();
  const int before = g_threads_created.load();
  for (int i = 0; i < 5; ++i) work();
  return g_threads_created.load() - before;
}

}  // namespace

class TestThreads : public QObject {
  Q_OBJECT
 private slots:
  void init() {
#ifdef CKPT_SANITIZED
    QSKIP("counting pthread_create needs the unsanitized build (the sanitizers intercept it)");
#endif
    omp_set_num_threads(2);
  }

  void parallelForThreadsWithOneThreadOpensNoRegion() {
    int level = -1;
    parallel_for_threads(1, 1, [&](std::int64_t) { level = omp_get_level(); });
    QCOMPARE(level, 0);
    int team = 0;
    parallel_for_threads(2, 2, [&](std::int64_t) {
      if (omp_get_thread_num() == 0) team = omp_get_num_threads();
    });
    QCOMPARE(team, 2);
  }

  // Batch 1: the per-image and Winograd paths have one image, so one block; the GEMMs and
  // column transforms inside must still run on the pool's threads.
  void convolutionsAtBatchOneCreateNoThreads_data() {
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("size");
    QTest::newRow("3x3 winograd 56x56") << 3 << 64 << 56;
    QTest::newRow("7x7 stride 2 im2col per image") << 7 << 16 << 64;
    QTest::newRow("1x1 per image 32x32") << 1 << 128 << 32;
  }
  void convolutionsAtBatchOneCreateNoThreads() {
    QFETCH(int, kernel);
    QFETCH(int, channels);
    QFETCH(int, size);
    Generator gen(1);
    Tensor x = random({1, channels, size, size}, gen);
    Tensor w = random({channels, channels, kernel, kernel}, gen);
    x.set_requires_grad(true);
    w.set_requires_grad(true);
    const std::int64_t stride = kernel == 7 ? 2 : 1, pad = kernel / 2;
    const int created = threads_created_after_warm_up([&] {
      Tensor y = conv2d(x, w, Tensor(), {stride, stride}, {pad, pad});
      sum(y).backward();
      x.set_grad(Tensor());
      w.set_grad(Tensor());
    });
    QCOMPARE(created, 0);
  }

  // Whole steps as the app runs them (batch 1 where the sample says so), every op included.
  void samplesStepsCreateNoThreads_data() {
    QTest::addColumn<QString>("file");
    for (const char* f : {"resnet.json", "densenet_block.json", "tiny_resnet.onnx",
                          "transformer_block.json", "lstm.json", "vit_tiny.json"})
      QTest::newRow(f) << f;
  }
  void samplesStepsCreateNoThreads() {
    QFETCH(QString, file);
    const auto path = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + file;
    auto model = load_model(path.toStdString());
    Runner runner(model);
    const RunRequest config = scenario_request(*model);
    const int created = threads_created_after_warm_up([&] {
      const RunResult r = runner.run(config);
      QVERIFY2(r.ok, r.error.c_str());
    });
    QCOMPARE(created, 0);
  }
};

QTEST_APPLESS_MAIN(TestThreads)
#include "test_threads.moc"
