// The native JSON format and the module analysis: names, parameters, module inputs and
// outputs, checkpointability, and errors that say where.
#include <QtTest>

#include "engine/model/finalize.hpp"
#include "engine/model/loader.hpp"
#include "engine/model/op_registry.hpp"

using namespace ckpt;

namespace {

const char* kMlp = R"({
  "format": "checkpoint-lab-model", "version": 1,
  "name": "mlp", "seed": 7, "batch": 3,
  "inputs": [{"name": "x", "shape": ["batch", 4], "requires_grad": true}],
  "model": {"type": "sequential", "layers": [
    {"type": "linear", "name": "fc1", "in": 4, "out": 8},
    {"type": "relu", "name": "act1"},
    {"type": "sequential", "name": "block", "layers": [
      {"type": "linear", "name": "fc", "in": 8, "out": 8},
      {"type": "gelu"}
    ]},
    {"type": "linear", "name": "head", "in": 8, "out": 2, "bias": false}
  ]},
  "checkpoint": {"modules": ["block"]},
  "notes": ["# MLP", "Click *block*."]
})";

const char* kHeavy = R"({
  "name": "heavy", "seed": 1,
  "inputs": [{"name": "x", "shape": [], "requires_grad": true}],
  "model": {"type": "sequential", "parameters": {"a": {"shape": [], "init": 1.0}},
    "layers": [{"type": "repeat", "count": 5, "body":
      {"type": "function", "name": "heavy_function", "layers": [
        {"type": "repeat", "count": 3, "body": {"type": "add", "param": "a"}}]}}]}
})";

QString error_of(const std::string& text) {
  try {
    load_model_json_text(text, "t.json");
  } catch (const std::invalid_argument& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestModel : public QObject {
  Q_OBJECT
 private slots:
  void mlpModulesOpsAndParameters() {
    auto m = load_model_json_text(kMlp, "mlp.json");
    QCOMPARE(m->format, std::string("json"));
    QCOMPARE(m->ops.size(), std::size_t{5});
    QCOMPARE(m->ops[0].name, std::string("fc1"));
    QCOMPARE(m->ops[0].op_type, std::string("linear"));
    QCOMPARE(m->ops[2].name, std::string("block.fc"));
    QCOMPARE(m->ops[3].name, std::string("block.gelu"));
    QCOMPARE(m->ops[3].module, std::string("block"));
    QVERIFY(m->find_parameter("fc1.weight"));
    QCOMPARE(m->find_parameter("fc1.weight")->initial.shape(), (Shape{8, 4}));
    QVERIFY(m->find_parameter("block.fc.bias"));
    QVERIFY(!m->find_parameter("head.bias"));
    // PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    for (double v : m->find_parameter("fc1.weight")->initial.to_vector())
      QVERIFY(std::abs(v) <= 0.5);
    const Module* block = m->find_module("block");
    QVERIFY(block);
    QCOMPARE(block->kind, std::string("Sequential"));
    QCOMPARE(block->first_op, std::int64_t{2});
    QCOMPARE(block->end_op, std::int64_t{4});
    QVERIFY(block->checkpointable);
    QCOMPARE(block->inputs, std::vector<std::string>{"act1"});
    QCOMPARE(block->outputs, std::vector<std::string>{"block.gelu"});
    QCOMPARE(block->parameters, (std::vector<std::string>{"block.fc.weight", "block.fc.bias"}));
    QCOMPARE(m->values.at("block.gelu").shape, (Shape{3, 8}));
    QCOMPARE(m->values.at("head").shape, (Shape{3, 2}));
    QCOMPARE(m->outputs, std::vector<std::string>{"head"});
    QCOMPARE(m->scenario.default_checkpoints, std::vector<std::string>{"block"});
    QCOMPARE(m->scenario.notes, std::string("# MLP\nClick *block*.\n"));
    QCOMPARE(m->all_modules().size(), std::size_t{5});
    QCOMPARE(m->op_index("head"), std::int64_t{4});
    QCOMPARE(m->op_index("nope"), std::int64_t{-1});
  }

  void parametersAreTheSameForTheSameSeed() {
    auto a = load_model_json_text(kMlp, "a.json");
    auto b = load_model_json_text(kMlp, "b.json");
    QCOMPARE(a->parameters[0].initial.to_vector(), b->parameters[0].initial.to_vector());
    std::string other = kMlp;
    other.replace(other.find("\"seed\": 7"), 9, "\"seed\": 8");
    auto c = load_model_json_text(other, "c.json");
    QVERIFY(a->parameters[0].initial.to_vector() != c->parameters[0].initial.to_vector());
  }

  void repeatedCallsAreInstancesSharingOneParameter() {
    auto m = load_model_json_text(kHeavy, "heavy.json");
    QCOMPARE(m->parameters.size(), std::size_t{1});
    QCOMPARE(m->parameters[0].name, std::string("a"));
    QCOMPARE(m->ops.size(), std::size_t{15});
    const auto inst = m->instances_of("heavy_function");
    QCOMPARE(inst.size(), std::size_t{5});
    QCOMPARE(inst[0]->path, std::string("heavy_function"));
    QCOMPARE(inst[1]->path, std::string("heavy_function_1"));
    QCOMPARE(inst[4]->instance, std::int64_t{4});
    QCOMPARE(m->ops[4].name, std::string("heavy_function_1.add_1"));
    QCOMPARE(inst[1]->inputs, std::vector<std::string>{"heavy_function.add_2"});
    QCOMPARE(inst[1]->parameters, std::vector<std::string>{"a"});
    QVERIFY(m->values.at("heavy_function_4.add_2").shape.empty());
    // As the blog wrote it, checkpoint(heavy_function, x, self.a): `a` is passed, not captured.
    std::string passing = kHeavy;
    passing.replace(passing.find("\"name\": \"heavy_function\","), 25,
                    "\"name\": \"heavy_function\", \"pass\": [\"a\"],");
    auto p = load_model_json_text(passing, "heavy.json");
    QCOMPARE(p->find_module("heavy_function_1")->inputs,
             (std::vector<std::string>{"heavy_function.add_2", "a"}));
    QCOMPARE(p->find_module("heavy_function_1")->passed_parameters, std::vector<std::string>{"a"});
  }

  void nonContiguousModuleSaysWhy() {
    Model m;
    m.source = "hand.json";
    m.inputs.push_back(InputInfo{"x", {2}, DType::f32, true});
    auto a = std::make_unique<Module>();
    a->path = a->name = a->definition = "a";
    auto b = std::make_unique<Module>();
    b->path = b->name = b->definition = "b";
    m.root.children.push_back(std::move(a));
    m.root.children.push_back(std::move(b));
    m.ops.push_back(OpNode{"a.sin", "sin", {"x"}, {"y1"}, {}, "a", {}});
    m.ops.push_back(OpNode{"b.cos", "cos", {"y1"}, {"y2"}, {}, "b", {}});
    m.ops.push_back(OpNode{"a.exp", "exp", {"y2"}, {"y3"}, {}, "a", {}});
    m.outputs = {"y3"};
    finalize_model(m);
    const Module* ma = m.find_module("a");
    QVERIFY(!ma->checkpointable);
    QVERIFY2(ma->not_checkpointable_reason.find("not contiguous") != std::string::npos &&
                 ma->not_checkpointable_reason.find("b.cos") != std::string::npos,
             ma->not_checkpointable_reason.c_str());
    QVERIFY(m.find_module("b")->checkpointable);
  }

  void syntaxErrorHasLineAndColumn() {
    const QString e = error_of("{\n  \"name\": \"x\",\n  \"seed\": ,\n}");
    QVERIFY2(e.startsWith("t.json:3:11: JSON syntax error"), qPrintable(e));
  }

  void semanticErrorsSayWhere_data() {
    QTest::addColumn<QString>("edit_from");
    QTest::addColumn<QString>("edit_to");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown type") << "\"type\": \"gelu\""
                                  << "\"type\": \"gelux\""
                                  << "t.json: model.layers[2] (sequential \"block\").layers[1]: "
                                     "unknown layer type \"gelux\"";
    QTest::newRow("missing key") << "\"in\": 4, "
                                 << ""
                                 << "t.json: model.layers[0] (linear \"fc1\"): missing \"in\"";
    QTest::newRow("bad type") << "\"out\": 2,"
                              << "\"out\": \"two\","
                              << "t.json: model.layers[3] (linear \"head\"): \"out\" must be an "
                                 "integer, got \"two\"";
    QTest::newRow("unknown checkpoint") << "\"modules\": [\"block\"]"
                                        << "\"modules\": [\"blok\"]"
                                        << "t.json: checkpoint.modules: no module \"blok\"";
    QTest::newRow("shape mismatch")
        << "\"in\": 8, \"out\": 2"
        << "\"in\": 7, \"out\": 2"
        << "t.json: node 'head' (linear on float32[3, 8], float32[2, 7]): ";
    QTest::newRow("duplicate module") << "\"name\": \"act1\""
                                      << "\"name\": \"fc1\""
                                      << "t.json: model.layers[1] (relu \"fc1\"): two modules "
                                         "named \"fc1\" in the model";
  }
  void semanticErrorsSayWhere() {
    QFETCH(QString, edit_from);
    QFETCH(QString, edit_to);
    QFETCH(QString, expected);
    QString text = kMlp;
    QVERIFY(text.contains(edit_from));
    text.replace(text.indexOf(edit_from), edit_from.size(), edit_to);
    const QString e = error_of(text.toStdString());
    QVERIFY2(e.startsWith(expected), qPrintable(e));
  }

  void unknownValueNameListsVisibleNames() {
    const QString e = error_of(R"({"inputs": [{"name": "x", "shape": [2]}],
      "model": {"type": "sequential", "layers": [{"type": "sin", "inputs": ["y"]}]}})");
    QVERIFY2(e.contains("unknown value \"y\" (names visible here: x)"), qPrintable(e));
  }

  // A language model's pieces: token ids and positions as integer inputs, an embedding, a
  // causal attention with its mask buffer, and [batch × T] targets against flattened logits.
  void languageModelInputsEmbeddingAndCausalMask() {
    const std::string lm = R"({"batch": 2,
      "inputs": [{"name": "idx", "shape": ["batch", 8], "classes": 50},
                 {"name": "pos", "shape": [8], "arange": true}],
      "model": {"type": "sequential", "args": ["idx", "pos"], "layers": [
        {"type": "embedding", "name": "wte", "num": 50, "dim": 16, "inputs": ["idx"], "as": "t"},
        {"type": "embedding", "name": "wpe", "num": 8, "dim": 16, "inputs": ["pos"], "as": "p"},
        {"type": "add", "inputs": ["t", "p"]},
        {"type": "attention", "name": "attn", "dim": 16, "heads": 2, "causal": true, "seq": 8},
        {"type": "linear", "name": "head", "in": 16, "out": 50, "bias": false},
        {"type": "reshape", "shape": [-1, 50]}]},
      "loss": {"type": "cross_entropy", "classes": 50, "per_example": 8}})";
    auto m = load_model_json_text(lm, "lm.json");
    QCOMPARE(m->inputs.size(), std::size_t{3});
    QCOMPARE(m->inputs[0].dtype, DType::i64);
    QCOMPARE(m->inputs[1].dtype, DType::i64);
    QVERIFY(m->inputs[1].arange);
    QCOMPARE(resolve_input_shape(m->inputs[2], 2), (Shape{16}));
    QCOMPARE(m->find_module("wte")->kind, std::string("Embedding"));
    QCOMPARE(m->find_parameter("wte.weight")->initial.shape(), (Shape{50, 16}));
    const ParameterInfo* mask = m->find_parameter("attn.causal_mask");
    QVERIFY(mask && mask->is_buffer && !mask->requires_grad);
    const auto v = mask->initial.to_vector();
    QCOMPARE(v[0 * 8 + 0], 0.0);
    QCOMPARE(v[3 * 8 + 2], 0.0);
    QVERIFY(v[2 * 8 + 3] < -1e38);
    QCOMPARE(m->values.at("head").shape, (Shape{2, 8, 50}));
    // Without "causal" the attention is unchanged: no mask, no extra op.
    std::string plain = lm;
    const std::string causal = ", \"causal\": true, \"seq\": 8";
    plain.replace(plain.find(causal), causal.size(), "");
    auto n = load_model_json_text(plain, "lm.json");
    QVERIFY(!n->find_parameter("attn.causal_mask"));
    QCOMPARE(n->ops.size() + 1, m->ops.size());

    auto error = [&](const std::string& from, const std::string& to) {
      std::string t = lm;
      t.replace(t.find(from), from.size(), to);
      return error_of(t);
    };
    QString e = error(", \"seq\": 8", "");
    QVERIFY2(e.contains("\"causal\": true needs \"seq\""), qPrintable(e));
    e = error("\"arange\": true", "\"arange\": true, \"classes\": 8");
    QVERIFY2(e.contains("inputs[1]: give \"classes\" (token ids) or \"arange\""), qPrintable(e));
    e = error("\"classes\": 50}", "\"classes\": 50, \"requires_grad\": true}");
    QVERIFY2(e.contains("cannot require grad"), qPrintable(e));
    e = error("\"num\": 50, ", "");
    QVERIFY2(e.contains("(embedding \"wte\"): missing \"num\""), qPrintable(e));
    e = error("\"seq\": 8", "\"seq\": 4");
    QVERIFY2(e.contains("attn.masked"), qPrintable(e));
  }

  // The native format's `expand` layer (a class token broadcast over the batch, a mask over
  // heads): a view of the input, -1 keeping a dimension, the shape inferred at load; a size
  // below zero is an error naming the layer's node, as PyTorch words it.
  void expandLayerIsABroadcastView() {
    const std::string text = R"({"inputs": [{"name": "x", "shape": [2, 1, 4]}],
      "model": {"type": "sequential", "parameters": {"cls": {"shape": [1, 1, 4], "init": 1.0}},
        "layers": [{"type": "add", "param": "cls"}, {"type": "expand", "shape": [-1, 3, 4]},
                   {"type": "relu", "name": "act"}]}})";
    auto m = load_model_json_text(text, "e.json");
    QCOMPARE(m->ops[1].op_type, std::string("expand"));
    QCOMPARE(m->values.at(m->ops[1].outputs[0]).shape, (Shape{2, 3, 4}));
    QCOMPARE(m->find_module("act")->kind, std::string("ReLU"));
    std::string bad = text;
    bad.replace(bad.find("[-1, 3, 4]"), 10, "[2, -3, 4]");
    const QString e = error_of(bad);
    QVERIFY2(e.startsWith("t.json") && e.contains("expand") && e.contains("negative dimension -3"),
             qPrintable(e));
  }

  void everyRegisteredKindIsListed() {
    const auto kinds = op_kinds();
    QVERIFY(std::is_sorted(kinds.begin(), kinds.end()));
    for (const auto& k : kinds) QVERIFY(find_op_kind(k));
    QVERIFY(!find_op_kind("no_such_op"));
  }
};

QTEST_GUILESS_MAIN(TestModel)
#include "test_model.moc"
