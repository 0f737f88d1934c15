// Issue 38: the ONNX that PyTorch 2.9+ writes (opsets 18 to 20). Each graph is written here as
// onnx.helper would (PyTorch 1.13 cannot export them) and compared with the same computation
// written at opset 13: outputs, the input's and the parameters' gradients, and the bytes kept
// for backward. Then the ops whose signature changed in 18 to 20 that the importer refuses,
// refused by name.
// GCC 12 reports a false -Wrestrict inside std::string when protobuf's string setters are
// inlined (GCC bug 105651); the warning stays on everywhere else.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <onnx/onnx_pb.h>

#include <QtTest>

#include <cmath>
#include <map>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

using Ints = std::vector<std::int64_t>;

// A graph with one float input "x", built node by node.
class Graph {
 public:
  Graph(int opset, const Shape& x) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(opset);
    g()->set_name("opset" + std::to_string(opset));
    auto* in = g()->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (auto d : x) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  Graph& weight(const std::string& name, const Shape& shape, float scale = 0.1f) {
    auto* w = g()->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto_DataType_FLOAT);
    std::int64_t n = 1;
    for (auto d : shape) {
      w->add_dims(d);
      n *= d;
    }
    for (std::int64_t i = 0; i < n; ++i)
      w->add_float_data(scale * static_cast<float>((i * 7) % 11 - 5) + 1.0f);
    return *this;
  }
  Graph& ints(const std::string& name, const Ints& values) {
    auto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (auto v : values) t->add_int64_data(v);
    return *this;
  }
  // A Constant node, as the exporters write a Python number.
  Graph& number(const std::string& name, float value) {
    auto* c = g()->add_node();
    c->set_name("/Constant_" + name);
    c->set_op_type("Constant");
    c->add_output(name);
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto_DataType_FLOAT);
    a->mutable_t()->add_float_data(value);
    return *this;
  }
  // A node; attributes follow with attr_*.
  Graph& node(const std::string& type, const std::vector<std::string>& in,
              const std::vector<std::string>& out) {
    last_ = g()->add_node();
    last_->set_name("/block/" + type + "_" + std::to_string(g()->node_size()));
    last_->set_op_type(type);
    for (const auto& i : in) last_->add_input(i);
    for (const auto& o : out) last_->add_output(o);
    return *this;
  }
  Graph& attr_i(const std::string& name, std::int64_t v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
    return *this;
  }
  Graph& attr_f(const std::string& name, float v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(v);
    return *this;
  }
  Graph& attr_s(const std::string& name, const std::string& v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
    return *this;
  }
  Graph& attr_ints(const std::string& name, const Ints& v) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (auto x : v) a->add_ints(x);
    return *this;
  }
  Graph& output(const std::string& name) {
    g()->add_output()->set_name(name);
    return *this;
  }
  std::shared_ptr<Model> load() const {
    return load_model_onnx_bytes(m_.SerializeAsString(), g_name() + ".onnx");
  }

 private:
  onnx::GraphProto* g() { return m_.mutable_graph(); }
  std::string g_name() const { return m_.graph().name(); }
  onnx::ModelProto m_;
  onnx::NodeProto* last_ = nullptr;
};

struct Outcome {
  RunResult run;
  std::int64_t saved = 0;
};

Tensor input_of(const Shape& shape) {
  std::vector<float> v;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  for (std::int64_t i = 0; i < n; ++i)
    v.push_back(0.37f * std::sin(1.3f * static_cast<float>(i)) + 0.05f * static_cast<float>(i % 5));
  return Tensor::from_vector(v, shape);
}

Outcome run(const std::shared_ptr<const Model>& model, const Tensor& x) {
  RunRequest r = scenario_request(*model);
  r.settings.inputs = {x};
  r.settings.input_requires_grad = true;
  r.settings.threads = 1;
  r.settings.backward = false;
  Outcome o;
  const RunResult forward = Runner(model).run(r);
  if (forward.ok) o.saved = saved_tensor_bytes(forward.outputs);
  r.settings.backward = true;
  o.run = Runner(model).run(r);
  return o;
}

double max_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const auto va = a.to_vector(), vb = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

// The two graphs compute the same: outputs, gradients and saved bytes.
void same(const Graph& newer, const Graph& older, const Shape& x_shape,
          std::int64_t expected_ops = -1) {
  const auto a = newer.load(), b = older.load();
  const Tensor x = input_of(x_shape);
  const Outcome ra = run(a, x), rb = run(b, x);
  QVERIFY2(ra.run.ok, ra.run.error.c_str());
  QVERIFY2(rb.run.ok, rb.run.error.c_str());
  QCOMPARE(ra.run.outputs.size(), rb.run.outputs.size());
  for (std::size_t k = 0; k < ra.run.outputs.size(); ++k)
    QVERIFY2(max_difference(ra.run.outputs[k], rb.run.outputs[k]) < 1e-5,
             qPrintable(QString("output %1 differs").arg(k)));
  QVERIFY(ra.run.input_gradients.count("x"));
  QVERIFY(max_difference(ra.run.input_gradients.at("x"), rb.run.input_gradients.at("x")) < 1e-5);
  QCOMPARE(ra.run.gradients.size(), rb.run.gradients.size());
  for (const auto& [name, g] : ra.run.gradients)
    QVERIFY2(max_difference(g, rb.run.gradients.at(name)) < 1e-5, name.c_str());
  QCOMPARE(ra.saved, rb.saved);
  if (expected_ops >= 0) QCOMPARE(static_cast<std::int64_t>(a->ops.size()), expected_ops);
}

std::string load_error(const Graph& g) {
  try {
    g.load();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestOnnxOpsets : public QObject {
  Q_OBJECT
 private slots:
  // Opset 18: every Reduce* takes its axes as an input (ReduceSum did from 13).
  void reduceAxesAsAnInput() {
    const Shape s{2, 3, 4};
    for (const char* type : {"ReduceMean", "ReduceMax"}) {
      for (std::int64_t keep : {0, 1}) {
        Graph newer(18, s), older(13, s);
        newer.ints("axes", {-1, 1}).node(type, {"x", "axes"}, {"y"}).attr_i("keepdims", keep);
        older.node(type, {"x"}, {"y"}).attr_ints("axes", {-1, 1}).attr_i("keepdims", keep);
        newer.output("y");
        older.output("y");
        same(newer, older, s, 1);
      }
      // No axes: every axis; noop_with_empty_axes: the input itself.
      Graph all18(18, s), all13(13, s);
      all18.node(type, {"x"}, {"y"}).output("y");
      all13.node(type, {"x"}, {"y"}).output("y");
      same(all18, all13, s);
      Graph noop(18, s), identity(13, s);
      noop.node("Relu", {"x"}, {"r"}).node(type, {"r"}, {"y"}).attr_i("noop_with_empty_axes", 1);
      identity.node("Relu", {"x"}, {"y"});
      noop.output("y");
      identity.output("y");
      same(noop, identity, s, 1);
    }
    Graph sum18(18, s), sum13(13, s);
    sum18.ints("axes", {2}).node("ReduceSum", {"x", "axes"}, {"y"}).output("y");
    sum13.ints("axes", {2}).node("ReduceSum", {"x", "axes"}, {"y"}).output("y");
    same(sum18, sum13, s, 1);
  }

  // Opset 18: Split by num_outputs, the last part smaller (torch.chunk's sizes).
  void splitByNumOutputs() {
    const Shape s{2, 7};
    Graph newer(18, s), older(13, s);
    newer.node("Split", {"x"}, {"a", "b", "c"}).attr_i("axis", 1).attr_i("num_outputs", 3);
    older.ints("sizes", {3, 3, 1}).node("Split", {"x", "sizes"}, {"a", "b", "c"}).attr_i("axis", 1);
    for (auto* g : {&newer, &older}) g->output("a").output("b").output("c");
    same(newer, older, s, 3);
    Graph wrong(18, s);
    wrong.node("Split", {"x"}, {"a", "b"}).attr_i("axis", 1).attr_i("num_outputs", 3);
    wrong.output("a").output("b");
    QVERIFY(load_error(wrong).find("num_outputs is 3 but the node has 2 outputs") !=
            std::string::npos);
  }

  // Opset 20: Gelu is one op; at 13 the exporter's Erf and Tanh forms, which the importer
  // fuses into the same op.
  void geluAsOneOp() {
    const Shape s{3, 5};
    Graph newer(20, s), older(13, s);
    newer.node("Gelu", {"x"}, {"y"}).output("y");
    older.number("sqrt2", static_cast<float>(std::sqrt(2.0)))
        .number("one", 1.0f)
        .number("half", 0.5f)
        .node("Div", {"x", "sqrt2"}, {"d"})
        .node("Erf", {"d"}, {"e"})
        .node("Add", {"e", "one"}, {"p"})
        .node("Mul", {"x", "p"}, {"m"})
        .node("Mul", {"m", "half"}, {"y"})
        .output("y");
    same(newer, older, s, 1);
    QCOMPARE(older.load()->ops.size(), std::size_t(1));
    Graph tanh20(20, s), tanh13(13, s);
    tanh20.node("Gelu", {"x"}, {"y"}).attr_s("approximate", "tanh").output("y");
    tanh13.number("c", 0.044715f)
        .number("k", static_cast<float>(std::sqrt(2.0 / M_PI)))
        .number("one", 1.0f)
        .number("half", 0.5f)
        .node("Mul", {"x", "x"}, {"x2"})
        .node("Mul", {"x", "x2"}, {"x3"})
        .node("Mul", {"c", "x3"}, {"cx3"})
        .node("Add", {"x", "cx3"}, {"in"})
        .node("Mul", {"k", "in"}, {"kin"})
        .node("Tanh", {"kin"}, {"t"})
        .node("Add", {"one", "t"}, {"p"})
        .node("Mul", {"x", "p"}, {"m"})
        .node("Mul", {"half", "m"}, {"y"})
        .output("y");
    same(tanh20, tanh13, s, 1);
    Graph bad(20, s);
    bad.node("Gelu", {"x"}, {"y"}).attr_s("approximate", "sigmoid").output("y");
    QVERIFY(load_error(bad).find("approximate must be 'none' or 'tanh'") != std::string::npos);
  }

  // Opset 18: Mish is one op.
  void mishAsOneOp() {
    const Shape s{4, 3};
    Graph newer(18, s), older(13, s);
    newer.node("Mish", {"x"}, {"y"}).output("y");
    older.node("Softplus", {"x"}, {"sp"})
        .node("Tanh", {"sp"}, {"t"})
        .node("Mul", {"x", "t"}, {"y"})
        .output("y");
    same(newer, older, s, 1);
  }

  // LayerNormalization as one op (the exporters' form from opset 17), against its opset-13
  // decomposition.
  void layerNormalizationAsOneOp() {
    const Shape s{2, 3, 8};
    Graph newer(18, s), older(13, s);
    newer.weight("w", {8}).weight("b", {8}, 0.05f);
    newer.node("LayerNormalization", {"x", "w", "b"}, {"y"})
        .attr_i("axis", -1)
        .attr_f("epsilon", 1e-5f)
        .output("y");
    older.weight("w", {8}).weight("b", {8}, 0.05f).number("two", 2.0f).number("eps", 1e-5f);
    older.node("ReduceMean", {"x"}, {"mean"})
        .attr_ints("axes", {-1})
        .node("Sub", {"x", "mean"}, {"d"})
        .node("Pow", {"d", "two"}, {"sq"})
        .node("ReduceMean", {"sq"}, {"var"})
        .attr_ints("axes", {-1})
        .node("Add", {"var", "eps"}, {"ve"})
        .node("Sqrt", {"ve"}, {"std"})
        .node("Div", {"d", "std"}, {"n"})
        .node("Mul", {"n", "w"}, {"nw"})
        .node("Add", {"nw", "b"}, {"y"})
        .output("y");
    same(newer, older, s, 1);
  }

  // The torch.export-based exporter writes BatchNorm in its inference form whatever the
  // module's mode: it runs in training mode, as the training-mode export does, and says so.
  void batchNormInInferenceFormRunsInTrainingMode() {
    const Shape s{2, 3, 4, 4};
    Graph newer(18, s), older(13, s);
    for (auto* g : {&newer, &older})
      g->weight("bn.weight", {3})
          .weight("bn.bias", {3}, 0.02f)
          .weight("bn.running_mean", {3}, 0.0f)
          .weight("bn.running_var", {3}, 0.0f);
    newer
        .node("BatchNormalization",
              {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"y"})
        .attr_i("training_mode", 0)
        .output("y");
    older
        .node("BatchNormalization",
              {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"y", "rm", "rv"})
        .output("y");
    same(newer, older, s, 1);
    const auto model = newer.load();
    QCOMPARE(model->load_notes.warnings.size(), std::size_t(1));
    QVERIFY(model->load_notes.warnings[0].rfind("1 node: BatchNormalization in inference form",
                                                0) == 0);
    QVERIFY(older.load()->load_notes.warnings.empty());
  }

  // rsqrt: Reciprocal(Sqrt(x)) (PyTorch 2.x) and Div(1, Sqrt(x)) (1.13) are both torch.rsqrt,
  // which keeps its result alone, as RMSNorm's e * rsqrt(e) shows: exp's result and rsqrt's,
  // not the square root as well.
  void rsqrtInBothSpellings() {
    const Shape s{2, 6};
    Graph newer(18, s), older(13, s);
    newer.node("Exp", {"x"}, {"e"}).node("Sqrt", {"e"}, {"r"}).node("Reciprocal", {"r"}, {"q"});
    older.number("one", 1.0f).node("Exp", {"x"}, {"e"}).node("Sqrt", {"e"}, {"r"});
    older.node("Div", {"one", "r"}, {"q"});
    for (auto* g : {&newer, &older}) g->node("Mul", {"e", "q"}, {"y"}).output("y");
    same(newer, older, s, 3);
    const auto model = newer.load();
    QCOMPARE(model->ops[1].op_type, std::string("rsqrt"));
    QCOMPARE(run(model, input_of(s)).saved, std::int64_t(2 * 2 * 6 * 4));
  }

  // Opset 19 gave AveragePool dilations, which PyTorch's average pooling has not.
  void dilatedAveragePoolIsRefused() {
    const Shape s{1, 1, 6, 6};
    Graph g(19, s);
    g.node("AveragePool", {"x"}, {"y"})
        .attr_ints("kernel_shape", {2, 2})
        .attr_ints("dilations", {2, 2})
        .output("y");
    const std::string e = load_error(g);
    QVERIFY2(e.find("opset19.onnx: node") != std::string::npos &&
                 e.find("dilations [2, 2] are not supported") != std::string::npos,
             e.c_str());
  }

  void opsetsBeyond20AreRefused() {
    Graph g(21, {2});
    g.node("Relu", {"x"}, {"y"}).output("y");
    QVERIFY(load_error(g).find("opset 21 is not supported (opsets 11 to 20 are)") !=
            std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestOnnxOpsets)
#include "test_onnx_opsets.moc"
