// The op table against what documents and tests it: every op kind has a finite-difference
// gradcheck row and a PyTorch oracle case (the few older kinds still without one are listed
// below and the list may only shrink), and the supported lists in samples/README.md are the
// table's.
#include <QtTest/QtTest>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "engine/ops/schema/op_schema.hpp"

using namespace ckpt;

namespace {

std::string read(const std::string& relative) {
  const char* root = std::getenv("CKPTLAB_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> matches(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[1].str());
  return out;
}

// A name covers `type` when it is the type or starts with it and a separator ("sum dim",
// "conv2d@stride2").
bool covered(const std::set<std::string>& names, const std::string& type) {
  // In-place kinds ("relu_") are named "relu_inplace" in the oracle.
  if (!type.empty() && type.back() == '_' &&
      names.count(type.substr(0, type.size() - 1) + "_inplace"))
    return true;
  for (const auto& n : names)
    if (n == type || (n.rfind(type, 0) == 0 && (n[type.size()] == ' ' || n[type.size()] == '@')))
      return true;
  return false;
}

// Kinds whose coverage is elsewhere or missing, with why. Adding a kind here is not how a new
// op gets in: write its gradcheck row and oracle case.
const std::map<std::string, std::string> kGradcheckElsewhere{
    {"add_scalar", "no own row: add(x, c) is the scalar form (row \"add\")"},
    {"sub_scalar", "covered with sub through the scalar overload"},
    {"mul_scalar", "covered with mul through the scalar overload"},
    {"div_scalar", "covered with div through the scalar overload"},
    {"identity", "returns its input: no backward of its own"},
    {"contiguous", "a copy only when not contiguous: covered by clone"},
    {"select", "slice then squeeze, each with its row"},
    {"squeeze", "covered by the view rows (test_gradcheck_nn)"},
    {"unsqueeze", "covered by the view rows (test_gradcheck_nn)"},
    {"mean_dims", "covered by row \"mean\" variants"},
    {"sum_dims", "covered by row \"sum dim\""},
    {"pow", "rows \"pow 2\", \"pow 0.5\""},
    {"add_", "in-place: checked by the oracle's add_inplace"},
    {"batch_norm", "gradcheck_nn's BatchNorm rows"},
    {"softmax", "gradcheck_nn"},
    {"cross_entropy", "gradcheck_nn"},
    {"mse_loss", "gradcheck_nn"},
    {"matmul", "row \"linear\" and gradcheck_nn's matmul rows"},
};
const std::set<std::string> kOracleGaps{
    "add",       "add_scalar", "clone",      "contiguous", "cos",      "div",     "div_scalar",
    "exp",       "expand",     "flatten",    "hardtanh",   "identity", "linear",  "log",
    "mean",      "mean_dims",  "mul",        "mul_scalar", "neg",      "permute", "pow",
    "relu",      "reshape",    "select",     "sigmoid",    "sin",      "slice",   "sqrt",
    "squeeze",   "sub",        "sub_scalar", "sum",        "sum_dims", "tanh",    "transpose",
    "unsqueeze", "view"};

}  // namespace

class TestOpTable : public QObject {
  Q_OBJECT

 private slots:
  void everyKindHasAGradcheckRow() {
    const std::regex row_re(R"re((?:row|newRow)\("([a-z_0-9@ .]+)")re");
    std::set<std::string> rows = matches(read("tests/engine/test_gradcheck.cpp"), row_re);
    for (const char* more :
         {"tests/engine/test_gradcheck_nn.cpp", "tests/engine/test_gradcheck_nd.cpp",
          "tests/engine/test_gradcheck_recurrent.cpp"}) {
      const auto named = matches(read(more), row_re);
      rows.insert(named.begin(), named.end());
    }
    QVERIFY2(rows.size() > 30, "the gradcheck sources were not found or not parsed");
    for (const auto& type : OpTable::instance().types()) {
      const bool has = covered(rows, type);
      if (kGradcheckElsewhere.count(type)) continue;
      QVERIFY2(has, qPrintable(QString::fromStdString("op kind '" + type +
                                                      "' has no gradcheck row in "
                                                      "tests/engine/test_gradcheck*.cpp")));
    }
  }

  void everyKindHasAnOracleCase() {
    std::set<std::string> cases;
    for (const char* f : {"cases_core.py", "cases_nn.py", "cases_models.py", "cases_checkpoint.py",
                          "cases_recurrent.py", "cases_nd.py"}) {
      const auto c = matches(read(std::string("tests/oracle/") + f),
                             std::regex(R"re(@case\(f?"([a-z_0-9@{}]+)")re"));
      cases.insert(c.begin(), c.end());
    }
    QVERIFY2(cases.size() > 20, "the oracle case sources were not found or not parsed");
    // Families of cases written with an f-string: "{kind}@{name}" covers the pools.
    for (const auto& type : OpTable::instance().types()) {
      const bool has = covered(cases, type);
      if (kOracleGaps.count(type)) {
        QVERIFY2(!has,
                 qPrintable(QString::fromStdString(
                     "op kind '" + type + "' now has an oracle case: take it off kOracleGaps")));
        continue;
      }
      QVERIFY2(has, qPrintable(QString::fromStdString("op kind '" + type +
                                                      "' has no oracle case in tests/oracle")));
    }
    for (const auto& gap : kOracleGaps)
      QVERIFY2(OpTable::instance().find(gap),
               qPrintable(QString::fromStdString("kOracleGaps names no op kind: " + gap)));
  }

  void samplesReadmeListsTheTablesOnnxOps() {
    const std::string doc = read("samples/README.md");
    const auto at = doc.find("Supported op types: ");
    QVERIFY(at != std::string::npos);
    const std::string list = doc.substr(at, doc.find(". A file", at) - at);
    std::set<std::string> listed = matches(list, std::regex(R"(([A-Z][A-Za-z]+)(?=[,. ]|$))"));
    listed.erase("Supported");
    const auto table = OpTable::instance().onnx_types();
    QCOMPARE(listed, std::set<std::string>(table.begin(), table.end()));
  }

  void samplesReadmeListsTheTablesNativeLayers() {
    const std::string doc = read("samples/README.md");
    const auto layers = OpTable::instance().native_layers();
    QVERIFY(layers.size() > 40);
    for (const auto& layer : layers)
      QVERIFY2(doc.find("`" + layer + "`") != std::string::npos,
               qPrintable(QString("native layer '%1' is not in samples/README.md")
                              .arg(QString::fromStdString(layer))));
  }

  void onnxRulesAreFoundByOpset() {
    const OpTable& t = OpTable::instance();
    QVERIFY(t.onnx_rule("Relu", 13));
    QVERIFY(t.onnx_rule("HardSwish", 14));
    QVERIFY(!t.onnx_rule("HardSwish", 13));  // HardSwish exists from opset 14
    QVERIFY(!t.onnx_rule("NoSuchOp", 13));
    QVERIFY(!t.find("onnx::Shape"));  // load-time rules are not op kinds
  }
};

QTEST_GUILESS_MAIN(TestOpTable)
#include "test_op_table.moc"
