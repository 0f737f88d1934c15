// Offloading a module's saved tensors to host memory (torch.autograd.graph.save_on_cpu(
// pin_memory=True), engine/checkpoint/offload.hpp): with CUDA's semantics the device keeps none
// of them after the forward, the host holds the copies, backward copies each back for the node
// that unpacks it, and the copies' time is the bytes over the link's bandwidth. On the CPU, where
// the copies would stay in the same memory, it is refused.
#include <QtTest>

#include <string>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::shared_ptr<const Model> sample(const char* name) {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name).toStdString());
}

RunRequest cuda_dry(const Model& model) {
  RunRequest r = scenario_request(model);
  r.plan = {};
  r.settings.device = Device::cuda;
  r.settings.dry_run = true;
  return r;
}

std::int64_t activations_at_forward_end(const RunResult& r) {
  return r.trace.memory_at(
      r.trace.forward_end())[static_cast<std::size_t>(MemoryCategory::activation)];
}

}  // namespace

class TestOffload : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "run under ctest");
  }

  // Every block offloaded: the activations the blocks saved leave the device at the end of the
  // forward (what is left is saved outside the blocks), and come back one node at a time.
  void offloadedBlocksLeaveTheDevice() {
    auto model = sample("gpt_mini.json");
    Runner runner(model);
    const RunRequest plain = cuda_dry(*model);
    const RunResult p = runner.run(plain);
    QVERIFY2(p.ok, p.error.c_str());
    QVERIFY(!p.offload);
    RunRequest off = plain;
    for (const auto& b : model->find_module("h")->children) off.plan.offload.insert(b->path);
    const RunResult o = runner.run(off);
    QVERIFY2(o.ok, o.error.c_str());
    QVERIFY(o.offload);
    const auto& f = *o.offload;
    QVERIFY(f.to_host_bytes > 0);
    // One unpack per saved tensor: what went out comes back, once.
    QCOMPARE(f.to_device_bytes, f.to_host_bytes);
    QVERIFY(f.host_peak_bytes > 0 && f.host_peak_bytes <= f.to_host_bytes + (1 << 20));
    QCOMPARE(f.pcie_gb_per_s, 25.0);
    QVERIFY(qFuzzyCompare(f.copy_ms, 2.0 * static_cast<double>(f.to_host_bytes) / 25e9 * 1e3));
    // The device's saved activations drop by the blocks' (the host copies duplicate a storage
    // two nodes save, as save_on_cpu does, so they can exceed the device's saving).
    const std::int64_t before = activations_at_forward_end(p);
    const std::int64_t after = activations_at_forward_end(o);
    QVERIFY2(
        after < before / 4,
        qPrintable(QString("activations at the forward's end %1 -> %2").arg(before).arg(after)));
    QVERIFY(o.trace.peak().bytes < p.trace.peak().bytes);
    QVERIFY2(
        f.to_host_bytes >= before - after,
        qPrintable(
            QString("%1 copied, %2 left the device").arg(f.to_host_bytes).arg(before - after)));
    // The gradients are the plain run's in shape (a dry run has no values).
    QCOMPARE(o.gradients.size(), p.gradients.size());
    // A slower link, the same bytes, a longer copy.
    off.settings.pcie_gb_per_s = 12.5;
    const RunResult slow = runner.run(off);
    QCOMPARE(slow.offload->to_host_bytes, f.to_host_bytes);
    QVERIFY(qFuzzyCompare(slow.offload->copy_ms, 2 * f.copy_ms));
    QCOMPARE(slow.trace.peak().bytes, o.trace.peak().bytes);
  }

  // Offload and checkpoint side by side, and a checkpoint inside an offloaded module: the
  // checkpoint's own saved inputs are what is offloaded of it.
  void offloadComposesWithCheckpoints() {
    auto model = sample("gpt_mini.json");
    Runner runner(model);
    RunRequest r = cuda_dry(*model);
    r.plan.offload = {"h.0"};
    r.plan.modules = {"h.1", "h.0.mlp"};
    r.settings.use_reentrant = false;
    const RunResult res = runner.run(r);
    QVERIFY2(res.ok, res.error.c_str());
    QVERIFY(res.offload && res.offload->to_host_bytes > 0);
    QCOMPARE(static_cast<int>(res.trace.recomputes().size()), 2);
  }

  void refusedWhereItWouldNotHelpOrMakesNoSense() {
    auto model = sample("gpt_mini.json");
    Runner runner(model);
    RunRequest cpu = scenario_request(*model);
    cpu.plan = {};
    cpu.plan.offload = {"h.0"};
    cpu.settings.dry_run = true;
    const RunResult a = runner.run(cpu);
    QVERIFY(!a.ok);
    QVERIFY2(a.error.find("cannot offload to host memory on cpu") != std::string::npos,
             a.error.c_str());
    RunRequest both = cuda_dry(*model);
    both.plan.offload = {"h.0"};
    both.plan.modules = {"h.0"};
    const RunResult b = runner.run(both);
    QVERIFY(!b.ok);
    QVERIFY2(b.error.find("cannot both checkpoint and offload 'h.0'") != std::string::npos,
             b.error.c_str());
    RunRequest missing = cuda_dry(*model);
    missing.plan.offload = {"h.9"};
    const RunResult c = runner.run(missing);
    QVERIFY(!c.ok);
    QVERIFY2(c.error.find("cannot offload 'h.9'") != std::string::npos, c.error.c_str());
  }
};

QTEST_GUILESS_MAIN(TestOffload)
#include "test_offload.moc"
