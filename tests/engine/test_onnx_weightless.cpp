// Issue 38: an ONNX file without its weights — its external data file absent (how large models
// travel: onnx.save_model(..., save_as_external_data=True) without the .data file) or its
// initializers stripped to their shapes — opens: a dry run is exact (the same trace as the
// whole file's), a real run makes the weights as torch.nn's default initialisation would, and
// the load summary says so.
// GCC 12 reports a false -Wrestrict inside std::string when protobuf's string setters are
// inlined (GCC bug 105651); the warning stays on everywhere else.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <onnx/onnx_pb.h>

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

enum class Weights { inline_data, external_absent, stripped };

void add_weight(onnx::GraphProto* g, const std::string& name, const Shape& shape, Weights how) {
  auto* w = g->add_initializer();
  w->set_name(name);
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (auto d : shape) w->add_dims(d);
  if (how == Weights::stripped) return;
  if (how == Weights::external_absent) {
    w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto* e = w->add_external_data();
    e->set_key("location");
    e->set_value("model.onnx.data");
    return;
  }
  for (std::int64_t i = 0; i < shape_numel(shape); ++i)
    w->add_float_data(0.05f * static_cast<float>(i % 7) - 0.1f);
}

void add_node(onnx::GraphProto* g, const std::string& name, const std::string& type,
              std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_name(name);
  n->set_op_type(type);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
}

// Conv (with bias) -> BatchNorm (training) -> Relu -> GlobalAveragePool -> Flatten -> Gemm.
onnx::ModelProto conv_net(Weights how) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("conv_net");
  auto* x = g->add_input();
  x->set_name("input");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (std::int64_t d : {2, 3, 8, 8}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  add_weight(g, "conv.weight", {4, 3, 3, 3}, how);
  add_weight(g, "conv.bias", {4}, how);
  add_weight(g, "bn.weight", {4}, how);
  add_weight(g, "bn.bias", {4}, how);
  add_weight(g, "bn.running_mean", {4}, how);
  add_weight(g, "bn.running_var", {4}, how);
  add_weight(g, "fc.weight", {5, 4}, how);
  add_weight(g, "fc.bias", {5}, how);
  add_node(g, "/conv/Conv", "Conv", {"input", "conv.weight", "conv.bias"}, {"c"});
  add_node(g, "/bn/BatchNormalization", "BatchNormalization",
           {"c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"b", "rm", "rv"});
  auto* pads = g->mutable_node(0)->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  add_node(g, "/relu/Relu", "Relu", {"b"}, {"r"});
  add_node(g, "/pool/GlobalAveragePool", "GlobalAveragePool", {"r"}, {"p"});
  add_node(g, "/Flatten", "Flatten", {"p"}, {"f"});
  add_node(g, "/fc/Gemm", "Gemm", {"f", "fc.weight", "fc.bias"}, {"y"});
  auto* trans_b = g->mutable_node(g->node_size() - 1)->add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(onnx::AttributeProto_AttributeType_INT);
  trans_b->set_i(1);
  g->add_output()->set_name("y");
  return m;
}

// The file, written into `dir` (its external data file, if any, is not).
std::shared_ptr<Model> load(const QTemporaryDir& dir, Weights how) {
  const std::string path = dir.filePath("model.onnx").toStdString();
  std::ofstream(path, std::ios::binary) << conv_net(how).SerializeAsString();
  return load_model(path);
}

RunResult run(const std::shared_ptr<const Model>& model, bool dry, std::uint64_t seed = 0) {
  RunRequest r = scenario_request(*model);
  r.settings.dry_run = dry;
  r.settings.seed = seed;
  r.settings.threads = 1;
  // A step of zero learning rate: the parameters after it are the ones the run started from.
  r.settings.optimizer.kind = OptimizerKind::sgd;
  r.settings.optimizer.lr = 0.0;
  return Runner(model).run(r);
}

}  // namespace

class TestOnnxWeightless : public QObject {
  Q_OBJECT
 private slots:
  void opensAndRunsWithoutItsWeights_data() {
    QTest::addColumn<int>("how");
    QTest::newRow("external data absent") << static_cast<int>(Weights::external_absent);
    QTest::newRow("initializers stripped") << static_cast<int>(Weights::stripped);
  }
  void opensAndRunsWithoutItsWeights() {
    QFETCH(int, how);
    QTemporaryDir dir;
    const auto whole = load(dir, Weights::inline_data);
    const auto weightless = load(dir, static_cast<Weights>(how));
    for (const auto& p : weightless->parameters) QVERIFY2(p.made_at_run, p.name.c_str());

    // Dry runs: the same allocations, to the byte, as the whole file's.
    const RunResult dry = run(weightless, true), dry_whole = run(whole, true);
    QVERIFY2(dry.ok, dry.error.c_str());
    QCOMPARE(dry.trace.peak().bytes, dry_whole.trace.peak().bytes);
    QCOMPARE(dry.trace.event_count(), dry_whole.trace.event_count());
    QCOMPARE(dry.trace.step_count(), dry_whole.trace.step_count());

    // A real run: the dry run's peak, and the weights as torch.nn makes them.
    const RunResult real = run(weightless, false);
    QVERIFY2(real.ok, real.error.c_str());
    QCOMPARE(real.trace.peak().bytes, dry.trace.peak().bytes);
    QCOMPARE(real.gradients.size(), std::size_t(6));
    auto values = [&](const char* name) { return real.parameters.at(name).to_vector(); };
    auto within = [](const std::vector<double>& v, double bound) {
      double lo = 0, hi = 0;
      for (double x : v) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      return hi <= bound && lo >= -bound && hi - lo > bound / 4;  // drawn, not constant
    };
    QVERIFY(within(values("conv.weight"), 1 / std::sqrt(27.0)));  // fan_in 3·3·3
    QVERIFY(within(values("conv.bias"), 1 / std::sqrt(27.0)));    // the weight's fan_in
    QVERIFY(within(values("fc.weight"), 1 / std::sqrt(4.0)));
    QVERIFY(within(values("fc.bias"), 1 / std::sqrt(4.0)));
    for (double v : values("bn.weight")) QCOMPARE(v, 1.0);
    for (double v : values("bn.bias")) QCOMPARE(v, 0.0);
    // The same at every run of a seed, another at another seed.
    const RunResult again = run(weightless, false), other = run(weightless, false, 7);
    QCOMPARE(again.parameters.at("conv.weight").to_vector(), values("conv.weight"));
    QVERIFY(other.parameters.at("conv.weight").to_vector() != values("conv.weight"));

    // Never silently: the load summary names them and how they are made.
    std::string summary;
    for (const auto& line : load_summary_lines(*weightless, true)) summary += line + "\n";
    QVERIFY2(summary.find("8 of 8 weights absent (") != std::string::npos, summary.c_str());
    QVERIFY2(summary.find(how == static_cast<int>(Weights::stripped)
                              ? "it holds no data (initializers stripped)"
                              : "its external data file 'model.onnx.data' is absent") !=
                 std::string::npos,
             summary.c_str());
    QVERIFY(summary.find("conv.weight: kaiming_uniform(a=√5), fan_in 27 (Conv)") !=
            std::string::npos);
    QVERIFY(summary.find("bn.running_var: ones (BatchNormalization)") != std::string::npos);
    QVERIFY(load_summary_lines(*whole).size() == 2);  // trainable, BatchNorm's statistics
  }

  // Shapes and indices cannot be made up: a stripped integer initializer is an error that
  // says so.
  void absentIntegersAreAnError() {
    auto m = conv_net(Weights::inline_data);
    auto* shape = m.mutable_graph()->add_initializer();
    shape->set_name("shape");
    shape->set_data_type(onnx::TensorProto_DataType_INT64);
    shape->add_dims(2);
    add_node(m.mutable_graph(), "/Reshape", "Reshape", {"y", "shape"}, {"z"});
    m.mutable_graph()->mutable_output(0)->set_name("z");
    try {
      load_model_onnx_bytes(m.SerializeAsString(), "ints.onnx");
      QFAIL("loaded");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      QVERIFY2(what.find("ints.onnx: initializer 'shape' (INT64): it holds no data") == 0,
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestOnnxWeightless)
#include "test_onnx_weightless.moc"
