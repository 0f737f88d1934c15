// Issue 38: initializers PyTorch does not train. An ONNX file does not tell a buffer from a
// weight; the project's exporters name buffers in the file's metadata (ckptlab.buffers), the
// user names them with --frozen patterns, and what is not trained gets no gradient and makes
// no op keep anything for one (q * cos keeps cos only, as PyTorch 1.13's MulBackward0 does).
// GCC 12 reports a false -Wrestrict inside std::string when protobuf's string setters are
// inlined (GCC bug 105651); the warning stays on everywhere else.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <onnx/onnx_pb.h>

#include <QtTest>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

void add_float(onnx::GraphProto* g, const std::string& name, std::vector<std::int64_t> dims) {
  auto* w = g->add_initializer();
  w->set_name(name);
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  std::int64_t n = 1;
  for (auto d : dims) {
    w->add_dims(d);
    n *= d;
  }
  for (std::int64_t i = 0; i < n; ++i) w->add_float_data(0.25f + 0.125f * static_cast<float>(i));
}

void add_node(onnx::GraphProto* g, const std::string& name, const std::string& type,
              std::vector<std::string> in, const std::string& out) {
  auto* n = g->add_node();
  n->set_name(name);
  n->set_op_type(type);
  for (auto& i : in) n->add_input(i);
  n->add_output(out);
}

// x [2, 4] · rotary.cos [4] (a table, as Llama's rotary embedding multiplies q by), then
// MatMul with proj.weight [4, 3]: y [2, 3].
onnx::ModelProto rotary_like() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("rotary_like");
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  add_float(g, "rotary.cos", {4});
  add_float(g, "proj.weight", {4, 3});
  add_node(g, "/rotary/Mul", "Mul", {"x", "rotary.cos"}, "h");
  add_node(g, "/proj/MatMul", "MatMul", {"h", "proj.weight"}, "y");
  g->add_output()->set_name("y");
  return m;
}

void name_buffers(onnx::ModelProto& m, const std::string& json) {
  auto* p = m.add_metadata_props();
  p->set_key(kOnnxBuffersKey);
  p->set_value(json);
}

std::shared_ptr<Model> load(const onnx::ModelProto& m, const LoadOptions& options = {}) {
  return load_model_onnx_bytes(m.SerializeAsString(), "rotary_like.onnx", {}, 0, options);
}

// Bytes the forward keeps for backward, and the run's gradients, with x requiring grad.
std::pair<std::int64_t, RunResult> run(const std::shared_ptr<const Model>& model) {
  RunRequest forward = scenario_request(*model);
  forward.settings.input_requires_grad = true;
  forward.settings.backward = false;
  RunResult f = Runner(model).run(forward);
  if (!f.ok) return {-1, std::move(f)};
  const std::int64_t saved = saved_tensor_bytes(f.outputs);
  RunRequest full = scenario_request(*model);
  full.settings.input_requires_grad = true;
  return {saved, Runner(model).run(full)};
}

bool throws_with(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      if (what.find(p) == std::string::npos) {
        qWarning("message '%s' lacks '%s'", what.c_str(), p.c_str());
        return false;
      }
    return true;
  }
  return false;
}

}  // namespace

class TestOnnxBuffers : public QObject {
  Q_OBJECT
 private slots:
  // Unnamed, the table is trained: Mul keeps x (for cos's gradient) and cos (for x's).
  void everyInitializerIsTrainedUnlessNamed() {
    auto model = load(rotary_like());
    QVERIFY(model->find_parameter("rotary.cos")->requires_grad);
    const auto [saved, r] = run(model);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(r.gradients.count("rotary.cos"));
    // Mul keeps x [2, 4] (and cos, model state); MatMul keeps h [2, 4] (and the weight).
    QCOMPARE(saved, std::int64_t(2 * 4 * 4 + 2 * 4 * 4));
  }

  // Named by the file: a buffer, no gradient, and Mul keeps nothing for one (cos is model
  // state, not an activation; x is not kept).
  void theFilesBuffersAreNotTrained() {
    auto m = rotary_like();
    name_buffers(m, R"(["rotary.cos"])");
    auto model = load(m);
    const ParameterInfo* cos = model->find_parameter("rotary.cos");
    QVERIFY(cos->is_buffer);
    QVERIFY(!cos->requires_grad);
    QVERIFY(model->find_parameter("proj.weight")->requires_grad);
    const auto [saved, r] = run(model);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(!r.gradients.count("rotary.cos"));
    QVERIFY(r.gradients.count("proj.weight"));
    QVERIFY(r.input_gradients.count("x"));
    QCOMPARE(saved, std::int64_t(2 * 4 * 4));  // MatMul's h alone
    const auto lines = load_summary_lines(*model);
    QCOMPARE(lines.size(), std::size_t(2));
    QCOMPARE(lines[0], std::string("1 of 2 initializers trainable: proj.weight"));
    QVERIFY(lines[1].find("rotary.cos") != std::string::npos);
    QVERIFY(lines[1].find(kOnnxBuffersKey) != std::string::npos);
  }

  // --frozen: a module path, a name, a glob whose * is one segment.
  void frozenPatternsName() {
    QVERIFY(frozen_pattern_matches("rotary", "rotary.cos"));
    QVERIFY(frozen_pattern_matches("rotary.cos", "rotary.cos"));
    QVERIFY(frozen_pattern_matches("*.cos", "rotary.cos"));
    QVERIFY(frozen_pattern_matches("layers.*.attn", "layers.3.attn.rotary.sin"));
    QVERIFY(!frozen_pattern_matches("rot", "rotary.cos"));
    QVERIFY(!frozen_pattern_matches("*.sin", "rotary.cos"));
    QVERIFY(!frozen_pattern_matches("layers.*", "blocks.1.w"));
    auto model = load(rotary_like(), {.frozen = {"*.cos"}});
    QVERIFY(!model->find_parameter("rotary.cos")->requires_grad);
    QVERIFY(model->find_parameter("proj.weight")->requires_grad);
    const auto [saved, r] = run(model);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(!r.gradients.count("rotary.cos"));
    QCOMPARE(saved, std::int64_t(2 * 4 * 4));
    QVERIFY(load_summary_lines(*model)[1].find("--frozen '*.cos'") != std::string::npos);
    // Frozen weights: nothing trains, MatMul keeps nothing for the weight either.
    auto all = load(rotary_like(), {.frozen = {"rotary", "proj"}});
    QCOMPARE(load_summary_lines(*all)[0], std::string("0 of 2 initializers trainable"));
  }

  // Every batch the file is loaded at keeps the user's patterns.
  void frozenSurvivesAnotherBatch() {
    auto m = rotary_like();
    m.mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->set_dim_param("batch");
    auto model = load(m, {.frozen = {"rotary"}});
    QVERIFY(model->at_batch);
    auto other = model->at_batch(5);
    QVERIFY(!other->find_parameter("rotary.cos")->requires_grad);
  }

  void badInputSaysWhy() {
    QVERIFY(throws_with([] { load(rotary_like(), {.frozen = {"nothing.*"}}); },
                        {"rotary_like.onnx", "--frozen 'nothing.*'", "rotary.cos"}));
    auto not_json = rotary_like();
    name_buffers(not_json, "rotary.cos");
    QVERIFY(
        throws_with([&] { load(not_json); }, {"rotary_like.onnx", kOnnxBuffersKey, "not JSON"}));
    auto not_list = rotary_like();
    name_buffers(not_list, R"({"rotary.cos": 1})");
    QVERIFY(throws_with([&] { load(not_list); }, {"rotary_like.onnx", "not a JSON list"}));
    auto not_names = rotary_like();
    name_buffers(not_names, R"(["rotary.cos", 3])");
    QVERIFY(throws_with([&] { load(not_names); }, {"rotary_like.onnx", "holds 3"}));
    // A buffer the exporter folded into a constant is no initializer: said, not an error.
    auto folded = rotary_like();
    name_buffers(folded, R"(["rotary.cos", "mask"])");
    auto model = load(folded);
    QCOMPARE(model->load_notes.warnings.size(), std::size_t(1));
    QVERIFY(model->load_notes.warnings[0].find("'mask'") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestOnnxBuffers)
#include "test_onnx_buffers.moc"
