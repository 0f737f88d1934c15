// ONNX import: the committed samples' module trees and names, and one test per kind of bad
// input, each asserting the message names the file, the node and the problem.
// GCC 12 reports a false -Wrestrict inside std::string when protobuf's string setters are
// inlined (GCC bug 105651); the warning stays on everywhere else.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <onnx/onnx_pb.h>

#include <QtTest>

#include <fstream>
#include <sstream>

#include "engine/model/loader.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::string sample(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString() + "/samples/" + name;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A small valid graph: input x [2, 3] -> MatMul with W [3, 4] -> Relu -> y.
onnx::ModelProto tiny() {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  auto* w = g->add_initializer();
  w->set_name("fc.weight");
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  w->add_dims(3);
  w->add_dims(4);
  for (int i = 0; i < 12; ++i) w->add_float_data(0.1f * static_cast<float>(i));
  auto* mm = g->add_node();
  mm->set_name("/fc/MatMul");
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("fc.weight");
  mm->add_output("h");
  auto* relu = g->add_node();
  relu->set_name("/act/Relu");
  relu->set_op_type("Relu");
  relu->add_input("h");
  relu->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

// tiny() exported with a dynamic batch axis.
onnx::ModelProto dynamic_tiny() {
  auto m = tiny();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("batch");
  return m;
}

// x [1, 1, 2, 2] -> Resize by scales [1, 1, 2, 2] (roi empty) with `mode` and `coordinates`
// -> y, as PyTorch exports F.interpolate(scale_factor=2).
onnx::ModelProto resize_model(const std::string& mode, const std::string& coordinates) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("resize");
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (int d : {1, 1, 2, 2}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  // Constant nodes, as PyTorch writes them (float initializers are parameters).
  for (const auto& [name, values] :
       {std::pair<std::string, std::vector<float>>{"roi", {}}, {"scales", {1, 1, 2, 2}}}) {
    auto* k = g->add_node();
    k->set_op_type("Constant");
    k->set_name("/up/" + name);
    k->add_output(name);
    auto* a = k->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto_DataType_FLOAT);
    a->mutable_t()->add_dims(static_cast<std::int64_t>(values.size()));
    for (float v : values) a->mutable_t()->add_float_data(v);
  }
  auto* node = g->add_node();
  node->set_name("/up/Resize");
  node->set_op_type("Resize");
  for (const char* in : {"x", "roi", "scales"}) node->add_input(in);
  node->add_output("y");
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"mode", mode},
                                   {"coordinate_transformation_mode", coordinates},
                                   {"nearest_mode", "floor"}}) {
    auto* a = node->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(value);
  }
  g->add_output()->set_name("y");
  return m;
}

// x [1, 2, 3, 3] -> one node of `op_type` on x and int64 constant `ints` (Tile's repeats), or on
// x and a float initializer w [2, 1, 2, 2] (ConvTranspose's weight) when ints is empty -> y.
onnx::ModelProto one_node(const std::string& op_type, const std::vector<std::int64_t>& ints) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("one");
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (int d : {1, 2, 3, 3}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  if (ints.empty()) {
    auto* w = g->add_initializer();
    w->set_name("up.weight");
    w->set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (int d : {2, 1, 2, 2}) w->add_dims(d);
    for (int i = 0; i < 8; ++i) w->add_float_data(0.5f);
  } else {
    auto* k = g->add_node();
    k->set_op_type("Constant");
    k->set_name("/up/Constant");
    k->add_output("up.weight");
    auto* a = k->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto_DataType_INT64);
    a->mutable_t()->add_dims(static_cast<std::int64_t>(ints.size()));
    for (auto v : ints) a->mutable_t()->add_int64_data(v);
  }
  auto* node = g->add_node();
  node->set_name("/up/" + op_type);
  node->set_op_type(op_type);
  node->add_input("x");
  node->add_input("up.weight");
  node->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

// x [5, 2, 3] -> one `op_type` (LSTM, GRU, RNN) node of hidden size 2 over initializers W, R
// and B in ONNX's layout (W with `w_rows` rows, normally gates * 2) -> y, y_h.
onnx::ModelProto recurrent_model(const std::string& op_type, std::int64_t w_rows) {
  const std::int64_t gates = op_type == "LSTM" ? 4 : op_type == "GRU" ? 3 : 1;
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("recurrent");
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (int d : {5, 2, 3}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  for (const auto& [name, dims] :
       {std::pair<std::string, std::vector<std::int64_t>>{"W", {1, w_rows, 3}},
        {"R", {1, gates * 2, 2}},
        {"B", {1, gates * 4}}}) {
    auto* w = g->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto_DataType_FLOAT);
    std::int64_t n = 1;
    for (auto d : dims) {
      w->add_dims(d);
      n *= d;
    }
    for (std::int64_t i = 0; i < n; ++i) w->add_float_data(0.01f * static_cast<float>(i % 7));
  }
  auto* node = g->add_node();
  node->set_name("/rnn/" + op_type);
  node->set_op_type(op_type);
  for (const char* in : {"x", "W", "R", "B"}) node->add_input(in);
  node->add_output("y");
  node->add_output("y_h");
  auto* hidden = node->add_attribute();
  hidden->set_name("hidden_size");
  hidden->set_type(onnx::AttributeProto_AttributeType_INT);
  hidden->set_i(2);
  g->add_output()->set_name("y");
  return m;
}

QString error_of(const onnx::ModelProto& m) {
  try {
    load_model_onnx_bytes(m.SerializeAsString(), "bad.onnx");
  } catch (const std::invalid_argument& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestOnnxLoader : public QObject {
  Q_OBJECT
 private slots:
  void tinyDenseNetKeepsPyTorchsNamesAndScopes() {
    auto m = load_model(sample("tiny_densenet.onnx"));
    QCOMPARE(m->format, std::string("onnx"));
    QVERIFY(m->find_parameter("features.conv0.weight"));
    QVERIFY(m->find_parameter("features.conv0.weight")->requires_grad);
    QVERIFY(m->find_parameter("features.norm0.running_mean")->is_buffer);
    QVERIFY(!m->find_parameter("features.norm0.running_mean")->requires_grad);
    const Module* layer = m->find_module("features.denseblock1.denselayer1");
    QVERIFY(layer);
    QVERIFY(layer->checkpointable);
    QCOMPARE(m->find_module("features.conv0")->kind, std::string("Conv2d"));
    QCOMPARE(m->find_module("features.denseblock1.denselayer1.norm1")->kind,
             std::string("BatchNorm2d"));
    // The dense layer takes every earlier feature map, as torchvision's does.
    QCOMPARE(m->find_module("features.denseblock1.denselayer3")->inputs.size(), std::size_t{3});
    QVERIFY(m->scenario.batch_fixed);
    QVERIFY(m->scenario.notes.find("exported graph") != std::string::npos);
  }

  void pytorchCodeWrapsTheChosenSubmodulesByName() {
    auto m = load_model(sample("tiny_resnet.onnx"));
    RunRequest c = scenario_request(*m);
    c.plan.modules = {"layer1.0", "layer2.1"};
    c.settings.use_reentrant = false;
    const std::string code = pytorch_code(*m, c);
    QVERIFY2(code.find("model.get_submodule(name)") != std::string::npos, code.c_str());
    QVERIFY2(code.find("    \"layer1.0\",\n    \"layer2.1\",\n], use_reentrant=False)") !=
                 std::string::npos,
             code.c_str());
    QVERIFY(code.find("exported graph") != std::string::npos);
  }

  void nestedSequentialUnderANamedChild() {
    // MobileNetV2's export: a Sequential `conv` inside features.13 names its children after
    // the scope name of `conv` itself, not after the full path.
    auto m = tiny();
    m.mutable_graph()->mutable_node(0)->set_name(
        "/features/features.13/conv/conv.1/conv.1.0/MatMul");
    auto model = load_model_onnx_bytes(m.SerializeAsString(), "mobilenet.onnx");
    QVERIFY(model->find_module("features.13.conv.1.0"));
    QCOMPARE(model->find_module("features.13.conv.1")->name, std::string("1"));
    QVERIFY(!model->find_module("features.13.conv.conv"));
  }

  void tinyResNetScopesOfSequentialChildren() {
    // PyTorch names a Sequential's child with its full path: /layer1/layer1.0/conv1/Conv.
    auto m = load_model(sample("tiny_resnet.onnx"));
    QVERIFY(m->find_module("layer1"));
    QVERIFY(m->find_module("layer1.0"));
    QCOMPARE(m->find_module("layer1.0")->name, std::string("0"));
    QVERIFY(m->find_module("layer1.0.conv1"));
    QVERIFY(m->find_module("layer2.0.downsample"));
    QVERIFY(m->find_module("layer2.0")->checkpointable);
    // Shapes were evaluated for the exported batch: another batch is a clear error.
    Runner runner(m);
    RunRequest c = scenario_request(*m);
    c.settings.batch = m->scenario.batch + 1;
    const RunResult r = runner.run(c);
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("fixed at export with batch") != std::string::npos, r.error.c_str());
  }

  void loadsByContentNotExtension() {
    QTemporaryDir dir;
    const QString path = dir.filePath("model.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(tiny().SerializeAsString()));
    f.close();
    auto m = load_model(path.toStdString());
    QCOMPARE(m->format, std::string("onnx"));
    QCOMPARE(m->ops.size(), std::size_t{2});
    QCOMPARE(m->ops[0].name, std::string("fc.MatMul"));
    QCOMPARE(m->ops[0].module, std::string("fc"));
  }

  void truncatedFile() {
    const std::string bytes = read(sample("tiny_resnet.onnx"));
    try {
      load_model_onnx_bytes(bytes.substr(0, bytes.size() / 2), "cut.onnx");
      QFAIL("expected an error");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).startsWith("cut.onnx: not an ONNX model"), e.what());
    }
  }

  void notOnnxAtAll() {
    QTemporaryDir dir;
    const QString path = dir.filePath("notes.txt");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a model\n");
    f.close();
    try {
      load_model(path.toStdString());
      QFAIL("expected an error");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).startsWith(path + ": not an ONNX model"), e.what());
    }
  }

  void unsupportedOpNamesItsNodeAndTheSupportedList() {
    auto m = tiny();
    m.mutable_graph()->mutable_node(1)->set_op_type("Celu");
    const QString e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/act/Relu' (Celu): op type 'Celu' is not supported "
                          "(supported: Abs, Add, And, AveragePool, BatchNormalization,"),
             qPrintable(e));
    // The list is complete: it ends with the last ONNX op type of the table.
    QVERIFY(e.contains(QString::fromStdString(OpTable::instance().onnx_types().back() + ")")));
  }

  // Einsum is translated only as a batched matrix product: "ij,jk->ik" computes MatMul's
  // numbers, anything else names the node and the equation.
  void einsumIsAMatrixProductOrANamedError() {
    auto m = tiny();
    auto* node = m.mutable_graph()->mutable_node(0);
    node->set_op_type("Einsum");
    auto* eq = node->add_attribute();
    eq->set_name("equation");
    eq->set_type(onnx::AttributeProto_AttributeType_STRING);
    eq->set_s("ij, jk -> ik");
    RunRequest c;
    c.settings.backward = false;
    c.settings.inputs = {Tensor::from_vector(std::vector<float>{1, 2, 3, -1, 0, 2}, {2, 3})};
    const auto plain = Runner(load_model_onnx_bytes(tiny().SerializeAsString(), "t.onnx")).run(c);
    const auto einsum = Runner(load_model_onnx_bytes(m.SerializeAsString(), "t.onnx")).run(c);
    QVERIFY2(plain.ok && einsum.ok, (plain.error + einsum.error).c_str());
    QCOMPARE(einsum.outputs.at(0).to_vector(), plain.outputs.at(0).to_vector());
    eq->set_s("ij,jk->ki");
    const QString e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/fc/MatMul' (Einsum): einsum 'ij,jk->ki' is not a "
                          "batched matrix product"),
             qPrintable(e));
  }

  // Resize: nearest as PyTorch writes it, linear (bilinear) with half_pixel and align_corners;
  // any other mode or coordinate mode names the node.
  void resizeModesOrANamedError() {
    RunRequest c;
    c.settings.backward = false;
    c.settings.inputs = {Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2})};
    auto first_row = [&](const onnx::ModelProto& m) {
      const auto r = Runner(load_model_onnx_bytes(m.SerializeAsString(), "t.onnx")).run(c);
      if (!r.ok) return std::vector<double>{};
      const auto v = r.outputs.at(0).to_vector();
      return std::vector<double>(v.begin(), v.begin() + 4);
    };
    QCOMPARE(first_row(resize_model("nearest", "asymmetric")), (std::vector<double>{1, 1, 2, 2}));
    // F.interpolate(scale_factor=2, mode="bilinear"): source x = (o + 0.5) / 2 - 0.5, clamped.
    QCOMPARE(first_row(resize_model("linear", "half_pixel")),
             (std::vector<double>{1, 1.25, 1.75, 2}));
    QCOMPARE(first_row(resize_model("linear", "pytorch_half_pixel")),
             (std::vector<double>{1, 1.25, 1.75, 2}));
    // align_corners=True: source x = o * (2 - 1) / (4 - 1).
    const auto aligned = first_row(resize_model("linear", "align_corners"));
    QCOMPARE(aligned.size(), std::size_t{4});
    QVERIFY(std::abs(aligned[1] - (1 + 1.0 / 3)) < 1e-6 && aligned[3] == 2);
    QString e = error_of(resize_model("cubic", "half_pixel"));
    QVERIFY2(e.startsWith("bad.onnx: node '/up/Resize' (Resize): mode 'cubic' is not supported"),
             qPrintable(e));
    e = error_of(resize_model("linear", "asymmetric"));
    QVERIFY2(e.startsWith("bad.onnx: node '/up/Resize' (Resize): linear with "
                          "coordinate_transformation_mode 'asymmetric' is not supported"),
             qPrintable(e));
  }

  // Tile's repeats: one per input dimension. ConvTranspose's output_shape: only the shape that
  // pads and output_padding give.
  // LSTM, GRU and RNN: a layer in ONNX's own layout loads as one op with both outputs; what
  // PyTorch's layers never export is a load error naming the node and the attribute.
  void recurrentLayersOrANamedError() {
    auto m = recurrent_model("GRU", 6);
    QString e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/rnn/GRU' (GRU): linear_before_reset=0 is not "
                          "supported"),
             qPrintable(e));
    auto* lbr = m.mutable_graph()->mutable_node(0)->add_attribute();
    lbr->set_name("linear_before_reset");
    lbr->set_type(onnx::AttributeProto_AttributeType_INT);
    lbr->set_i(1);
    const auto model = load_model_onnx_bytes(m.SerializeAsString(), "t.onnx");
    // Views of the direction's rows of W, R and B, B's two halves, the gru.
    QCOMPARE(model->ops.size(), std::size_t{6});
    const OpNode& gru = model->ops.back();
    QCOMPARE(gru.op_type, std::string("gru"));
    QCOMPARE(gru.outputs.size(), std::size_t{2});
    QCOMPARE(model->values.at("y").shape, (Shape{5, 1, 2, 2}));
    e = error_of(recurrent_model("LSTM", 7));
    QVERIFY2(e.startsWith("bad.onnx: node '/rnn/LSTM' (LSTM): W must be [1, 8, 3], got [1, 7, 3]"),
             qPrintable(e));
    m = recurrent_model("RNN", 2);
    auto* act = m.mutable_graph()->mutable_node(0)->add_attribute();
    act->set_name("activations");
    act->set_type(onnx::AttributeProto_AttributeType_STRINGS);
    act->add_strings("Sigmoid");
    e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/rnn/RNN' (RNN): activations 'Sigmoid' are not "
                          "supported (Tanh are, as in PyTorch)"),
             qPrintable(e));
  }

  void tileAndConvTransposeNamedErrors() {
    RunRequest c;
    c.settings.backward = false;
    c.settings.inputs = {Tensor::ones({1, 2, 3, 3})};
    auto shape_of = [&](const onnx::ModelProto& m) {
      const auto r = Runner(load_model_onnx_bytes(m.SerializeAsString(), "t.onnx")).run(c);
      return r.ok ? r.outputs.at(0).shape() : Shape{};
    };
    QCOMPARE(shape_of(one_node("Tile", {2, 1, 1, 3})), (Shape{2, 2, 3, 9}));
    QString e = error_of(one_node("Tile", {2, 3}));
    QVERIFY2(e.startsWith("bad.onnx: node '/up/Tile' (Tile): repeats [2, 3] must have one entry "
                          "per dimension of the input"),
             qPrintable(e));
    auto m = one_node("ConvTranspose", {});
    auto* node = m.mutable_graph()->mutable_node(0);
    auto* strides = node->add_attribute();
    strides->set_name("strides");
    strides->set_type(onnx::AttributeProto_AttributeType_INTS);
    strides->add_ints(2);
    strides->add_ints(2);
    QCOMPARE(shape_of(m), (Shape{1, 1, 6, 6}));  // (3 - 1) * 2 + 2
    auto* out = node->add_attribute();
    out->set_name("output_shape");
    out->set_type(onnx::AttributeProto_AttributeType_INTS);
    out->add_ints(7);
    out->add_ints(7);
    e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/up/ConvTranspose' (ConvTranspose): output_shape "
                          "[7, 7] differs from [6, 6]"),
             qPrintable(e));
  }

  void missingInitializer() {
    auto m = tiny();
    m.mutable_graph()->mutable_initializer()->Clear();
    const QString e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/fc/MatMul' (MatMul): input 'fc.weight' is missing"),
             qPrintable(e));
  }

  // Load-time arithmetic PyTorch's exports use for shapes (ViT's shape assertion and
  // expand(n, -1, -1), Swin's shifted windows): Mod (Python's and C's), Equal, Where, Expand;
  // And, Or, Xor on booleans (nn.MultiheadAttention's attn_mask | key_padding_mask).
  void shapeArithmeticFolds() {
    const char* root = std::getenv("CKPTLAB_SOURCE_DIR");
    auto m = load_model(std::string(root ? root : ".") + "/tests/engine/data/folds.onnx");
    RunRequest c;
    c.settings.backward = false;
    c.settings.inputs = {Tensor::zeros({32})};
    const RunResult r = Runner(m).run(c);
    QVERIFY2(r.ok, r.error.c_str());
    const std::vector<double> expected{2, 1, -1, -2, -1, 1, -1, 1, 1, 0, 0, 1, -7, 3, -3, 7,
                                       1, 1, 1,  1,  1,  0, 0,  0, 1, 1, 0, 1, 0,  1, 0,  1};
    QCOMPARE(r.outputs.at(0).to_vector(), expected);
  }

  // Weights in an external data file beside the model (how models over 2 GB are exported):
  // read from inside the model's folder only.
  void externalWeights() {
    QTemporaryDir dir;
    auto m = tiny();
    auto* w = m.mutable_graph()->mutable_initializer(0);
    std::string raw;
    for (float v : w->float_data()) raw.append(reinterpret_cast<const char*>(&v), sizeof v);
    w->clear_float_data();
    w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto entry = [&](const char* key, const std::string& value) {
      auto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", "weights.bin");
    entry("offset", "16");
    entry("length", std::to_string(raw.size()));
    {
      std::ofstream f((dir.path() + "/weights.bin").toStdString(), std::ios::binary);
      f << std::string(16, 'x') << raw;
    }
    const std::string path = (dir.path() + "/model.onnx").toStdString();
    auto save = [&] {
      std::ofstream f(path, std::ios::binary);
      f << m.SerializeAsString();
    };
    save();
    auto model = load_model(path);
    const auto& p = model->parameters.at(0);
    QCOMPARE(p.name, std::string("fc.weight"));
    QCOMPARE(p.initial.to_vector().at(11), static_cast<double>(1.1f));

    auto error = [&] {
      save();
      try {
        load_model(path);
      } catch (const std::exception& e) {
        return QString(e.what());
      }
      return QString();
    };
    w->mutable_external_data(0)->set_value("../weights.bin");
    QVERIFY2(error().contains("'../weights.bin' is outside the model's folder"),
             qPrintable(error()));
    // An absent file is how large models travel without their weights: it loads, its weights
    // made for a real run (test_engine_onnx_weightless).
    w->mutable_external_data(0)->set_value("missing.bin");
    save();
    const auto weightless = load_model(path);
    QVERIFY(weightless->parameters.at(0).made_at_run);
    QCOMPARE(weightless->load_notes.weights_absent,
             std::string("its external data file 'missing.bin' is absent"));
    w->mutable_external_data(0)->set_value("weights.bin");
    w->mutable_external_data(1)->set_value("40");
    QVERIFY2(error().contains("outside its external data file"), qPrintable(error()));
  }

  // A dynamic batch axis: any batch runs (the file is loaded again at that batch); a fixed one
  // says how to export it dynamic.
  void dynamicBatch() {
    const auto m = dynamic_tiny();
    auto model = load_model_onnx_bytes(m.SerializeAsString(), "dynamic.onnx");
    QVERIFY(model->at_batch);
    QVERIFY(!model->scenario.batch_fixed);
    RunRequest c;
    c.settings.batch = 3;
    const RunResult r = Runner(model).run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.outputs.at(0).shape(), (Shape{3, 4}));
    // Loading computes nothing (shapes come from the meta device): a batch whose activations
    // no machine holds loads again, and its dry run gives the exact bytes.
    c.settings.batch = std::int64_t{1} << 36;
    c.settings.dry_run = true;
    const RunResult huge = Runner(model).run(c);
    QVERIFY2(huge.ok, huge.error.c_str());
    QVERIFY(huge.trace.peak().bytes > (std::int64_t{1} << 40));
    QCOMPARE(huge.outputs.at(0).shape(), (Shape{std::int64_t{1} << 36, 4}));

    auto fixed = load_model_onnx_bytes(tiny().SerializeAsString(), "fixed.onnx");
    QVERIFY(!fixed->at_batch);
    const RunResult refused = Runner(fixed).run(c);
    QVERIFY(!refused.ok);
    QVERIFY2(refused.error.find("dynamic_axes") != std::string::npos, refused.error.c_str());
  }

  // A dynamic-batch file opened from disk: another batch reads the file again (its bytes are
  // not kept), shares the weights of the model first loaded, and a file that changed since is
  // an error naming it.
  void dynamicBatchFromAFileSharesWeightsAndRereads() {
    const auto m = dynamic_tiny();
    QTemporaryDir dir;
    const std::string path = dir.filePath("dynamic.onnx").toStdString();
    {
      std::ofstream f(path, std::ios::binary);
      f << m.SerializeAsString();
    }
    const auto model = load_model(path);
    QVERIFY(model->at_batch);
    const auto at5 = model->at_batch(5);
    QCOMPARE(at5->scenario.batch, std::int64_t{5});
    QCOMPARE(at5->parameters.size(), model->parameters.size());
    for (std::size_t i = 0; i < model->parameters.size(); ++i)
      QVERIFY(at5->parameters[i].initial.shares_storage(model->parameters[i].initial));
    RunRequest c;
    c.settings.batch = 5;
    const RunResult r = Runner(model).run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.outputs.at(0).shape(), (Shape{5, 4}));
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f << "changed";
    }
    try {
      model->at_batch(6);
      QFAIL("a changed file loaded at another batch");
    } catch (const std::invalid_argument& e) {
      const QString what = e.what();
      QVERIFY2(what.startsWith(QString::fromStdString(path)) && what.contains("changed"),
               qPrintable(what));
    }
  }

  void shapeThatDoesNotFit() {
    auto m = tiny();
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, 4);
    m.mutable_graph()->mutable_initializer(0)->set_dims(1, 3);
    const QString e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/fc/MatMul' (MatMul): ") && e.contains("[2, 3]") &&
                 e.contains("[4, 3]"),
             qPrintable(e));
  }

  // A corrupt initializer whose dims claim 2^40 elements while holding 12 values: an error that
  // names the initializer and both counts, checked before anything is allocated (ASan aborts the
  // test on a multi-terabyte request if the order regresses).
  void absurdInitializerShapeIsAnErrorNotAnAllocation() {
    for (const bool raw : {false, true}) {
      auto m = tiny();
      auto* w = m.mutable_graph()->mutable_initializer(0);
      w->set_dims(0, std::int64_t{1} << 20);
      w->set_dims(1, std::int64_t{1} << 20);
      if (raw) {
        w->clear_float_data();
        w->set_raw_data(std::string(48, '\0'));
      }
      const QString e = error_of(m);
      QVERIFY2(e.startsWith("bad.onnx: initializer: tensor 'fc.weight'"), qPrintable(e));
      QVERIFY2(e.contains(raw ? "raw data holds 48 bytes" : "it holds 12 values"), qPrintable(e));
      QVERIFY2(e.contains("1099511627776"), qPrintable(e));
    }
  }

  void cycle() {
    auto m = tiny();
    // MatMul now also needs y, which Relu makes from MatMul's output.
    auto* g = m.mutable_graph();
    g->mutable_node(0)->set_op_type("Add");
    g->mutable_node(0)->set_input(1, "y");
    const QString e = error_of(m);
    QVERIFY2(e.startsWith("bad.onnx: node '/fc/MatMul' (Add): the graph has a cycle"),
             qPrintable(e));
  }

  void opsetOutOfRange() {
    auto m = tiny();
    m.mutable_opset_import(0)->set_version(9);
    QCOMPARE(error_of(m), QString("bad.onnx: opset 9 is not supported (opsets 11 to 20 are)"));
  }

  void supportedListIsSorted() {
    const auto ops = supported_onnx_ops();
    QVERIFY(std::is_sorted(ops.begin(), ops.end()));
    for (const char* op : {"Conv", "BatchNormalization", "Gemm", "LayerNormalization", "Shape",
                           "Gather", "Unsqueeze", "Concat", "Cast", "Erf", "Clip"})
      QVERIFY2(std::binary_search(ops.begin(), ops.end(), std::string(op)), op);
  }
};

QTEST_GUILESS_MAIN(TestOnnxLoader)
#include "test_onnx_loader.moc"
