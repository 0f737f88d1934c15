#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/core/model_graph.hpp"
#include "ui/layout/dot_format.hpp"
#include "ui/layout/layout_engine.hpp"

using namespace ckpt;
using namespace ckpt::ui;

namespace {

// A chain of `blocks` modules of `opsPerBlock` ops each (HeavyModel's shape when 1000 x 100),
// each block nested one level under a "stage" module every `perStage` blocks when > 0.
std::shared_ptr<Model> chainModel(int blocks, int opsPerBlock, int perStage = 0) {
  auto m = std::make_shared<Model>();
  m->name = "chain";
  m->inputs.push_back({"x", {4}, DType::f32, true, false});
  std::string prev = "x";
  Module* parent = &m->root;
  std::unique_ptr<Module> stage;
  auto flushStage = [&] {
    if (stage) m->root.children.push_back(std::move(stage));
  };
  for (int b = 0; b < blocks; ++b) {
    if (perStage > 0 && b % perStage == 0) {
      flushStage();
      stage = std::make_unique<Module>();
      stage->name = "stage" + std::to_string(b / perStage);
      stage->path = stage->name;
      stage->kind = "Sequential";
      stage->first_op = static_cast<std::int64_t>(m->ops.size());
      parent = stage.get();
    }
    auto block = std::make_unique<Module>();
    block->name = b == 0 ? "block" : "block_" + std::to_string(b);
    block->path = parent->path.empty() ? block->name : parent->path + "." + block->name;
    block->kind = "heavy_function";
    block->first_op = static_cast<std::int64_t>(m->ops.size());
    block->checkpointable = true;
    for (int i = 0; i < opsPerBlock; ++i) {
      OpNode op;
      op.name = block->path + ".add" + std::to_string(i);
      op.op_type = "add";
      op.inputs = {prev, "a"};
      op.outputs = {op.name + ".out"};
      op.module = block->path;
      prev = op.outputs[0];
      m->ops.push_back(std::move(op));
    }
    block->end_op = static_cast<std::int64_t>(m->ops.size());
    parent->children.push_back(std::move(block));
    if (stage) stage->end_op = static_cast<std::int64_t>(m->ops.size());
  }
  flushStage();
  m->outputs = {prev};
  m->root.end_op = static_cast<std::int64_t>(m->ops.size());
  return m;
}

bool contains(const LayoutRect& outer, const LayoutRect& inner) {
  return inner.x >= outer.x - 0.01 && inner.y >= outer.y - 0.01 &&
         inner.x + inner.width <= outer.x + outer.width + 0.01 &&
         inner.y + inner.height <= outer.y + outer.height + 0.01;
}

}  // namespace

class TestLayout : public QObject {
  Q_OBJECT

 private slots:
  void dotTextKeepsClustersNested() {
    LayoutGraph g;
    g.clusters = {{"outer", "outer", ""}, {"inner", "in \"quoted\"", "outer"}};
    g.nodes = {{"a", 72, 36, "inner"}, {"b", 72, 36, "outer"}, {"c", 72, 36, ""}};
    g.edges = {{"a", "b"}, {"b", "c"}};
    const std::string dot = toDot(g);
    const auto outerAt = dot.find("subgraph cluster_0");
    const auto innerAt = dot.find("subgraph cluster_1");
    QVERIFY(outerAt != std::string::npos && innerAt > outerAt);
    QVERIFY(dot.find("in \\\"quoted\\\"") != std::string::npos);
    QVERIFY(dot.find("width=1.0000") != std::string::npos);
    g.nodes[0].cluster = "nowhere";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, toDot(g));
  }

  void parsesDotJsonAndFlipsY() {
    LayoutGraph g;
    g.clusters = {{"outer", "outer", ""}, {"inner", "inner", "outer"}};
    g.nodes = {{"a", 86, 29, "inner"}, {"b", 54, 36, "outer"}, {"c", 54, 36, ""}};
    g.edges = {{"b", "c"}, {"a", "b"}};
    // Real dot 2.43 output for this graph, trimmed to what the parser reads.
    const char* json = R"({"bb":"0,0,134,243","_subgraph_cnt":2,"objects":[
      {"name":"cluster_0","bb":"8,64,126,235","_gvid":0},
      {"name":"cluster_1","bb":"16,136,118,204","_gvid":1},
      {"_gvid":2,"name":"a","pos":"67,158.5","width":"1.1944","height":"0.40278"},
      {"_gvid":3,"name":"b","pos":"67,90","width":"0.75","height":"0.5"},
      {"_gvid":4,"name":"c","pos":"67,18","width":"0.75","height":"0.5"}],
      "edges":[{"_gvid":0,"tail":2,"head":3,"id":"1","pos":"e,67,108.07 67,143.72 67,136.36 67,127.04 67,118.29"},
               {"_gvid":1,"tail":3,"head":4,"id":"0","pos":"e,67,36.104 67,71.697 67,63.983 67,54.712 67,46.112"}]})";
    LayoutResult r = parseDotJson(json, g);
    QCOMPARE(r.nodes.size(), std::size_t(3));
    QCOMPARE(r.clusters.size(), std::size_t(2));
    // y grows downwards: a (top in dot's coordinates) has the smallest y.
    QVERIFY(r.nodes["a"].y < r.nodes["b"].y);
    QVERIFY(r.nodes["b"].y < r.nodes["c"].y);
    QCOMPARE(r.nodes["c"].y + r.nodes["c"].height, 243.0);
    QVERIFY(contains(r.clusters["outer"], r.clusters["inner"]));
    QVERIFY(contains(r.clusters["inner"], r.nodes["a"]));
    // Edge routes come back in the graph's order, whatever dot's.
    QCOMPARE(r.edges.size(), std::size_t(2));
    QCOMPARE(r.edges[0].points.size(), std::size_t(4));
    QVERIFY(r.edges[0].hasArrowHead);
    QCOMPARE(r.edges[0].arrowHead.y, 243 - 36.104);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, parseDotJson("{not json", g));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                             parseDotJson(R"({"bb":"0,0,1,1","objects":[]})", g));
  }

  void parsingIgnoresTheLocale() {
    const QLocale saved;
    QLocale::setDefault(QLocale(QLocale::German));
    std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
    LayoutGraph g;
    g.nodes = {{"a", 72, 36, ""}};
    const std::string dot = toDot(g);
    QVERIFY(dot.find("width=1.0000") != std::string::npos);
    LayoutResult r = parseDotJson(
        R"({"bb":"0,0,54.5,36","objects":[{"name":"a","pos":"27.25,18","width":"0.75","height":"0.5"}]})",
        g);
    QCOMPARE(r.nodes["a"].x, 27.25 - 27);
    std::setlocale(LC_NUMERIC, "C");
    QLocale::setDefault(saved);
  }

  void realDotLaysOutClustersWithNodesInside() {
    auto model = chainModel(6, 3, 3);
    ModelGraph graph(model,
                     {"stage0", "stage0.block", "stage0.block_1", "stage0.block_2", "stage1"});
    LayoutEngine engine;
    QSignalSpy done(&engine, &LayoutEngine::finished);
    QSignalSpy failed(&engine, &LayoutEngine::failed);
    engine.request(graph.layoutGraph());
    QVERIFY(engine.busy());
    QVERIFY2(done.wait(20000),
             failed.isEmpty() ? "no answer" : qPrintable(failed.first().at(1).toString()));
    QVERIFY(!engine.busy());
    auto result = done.first().at(1).value<LayoutResultPtr>();
    QVERIFY(result);
    QCOMPARE(result->nodes.size(), graph.layoutGraph().nodes.size());
    for (const auto& n : graph.layoutGraph().nodes) {
      QVERIFY(result->nodes.count(n.id));
      if (!n.cluster.empty())
        QVERIFY(contains(result->clusters.at(n.cluster), result->nodes.at(n.id)));
    }
    for (const auto& c : graph.layoutGraph().clusters)
      if (!c.parent.empty())
        QVERIFY(contains(result->clusters.at(c.parent), result->clusters.at(c.id)));
    // The chain runs top to bottom.
    const auto& first = result->nodes.at(ModelGraph::opId("stage0.block.add0"));
    const auto& last = result->nodes.at(ModelGraph::moduleId("stage1.block_5"));
    QVERIFY(first.y < last.y);

    // The same graph again is a cache hit.
    engine.request(graph.layoutGraph());
    QVERIFY(done.wait(5000));
    QCOMPARE(engine.lastDotMs(), qint64(0));
  }

  void diskCacheServesANewEngine() {
    QTemporaryDir dir;
    auto model = chainModel(4, 2);
    ModelGraph graph(model, {});
    {
      LayoutEngine engine;
      engine.setCacheDirectory(dir.path());
      QSignalSpy done(&engine, &LayoutEngine::finished);
      engine.request(graph.layoutGraph());
      QVERIFY(done.wait(20000));
    }
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
    LayoutEngine engine;
    engine.setDotProgram(QStringLiteral("/nonexistent/dot"));  // must not be needed
    engine.setCacheDirectory(dir.path());
    QSignalSpy done(&engine, &LayoutEngine::finished);
    engine.request(graph.layoutGraph());
    QVERIFY(done.wait(5000));
  }

  void missingDotIsAClearFailure() {
    LayoutEngine engine;
    engine.setDotProgram(QStringLiteral("/nonexistent/dot"));
    QSignalSpy failed(&engine, &LayoutEngine::failed);
    LayoutGraph g;
    g.nodes = {{"a", 72, 36, ""}};
    engine.request(g);
    QVERIFY(failed.wait(5000));
    QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("/nonexistent/dot")));
    QVERIFY(!engine.busy());
  }

  void timeLimitStopsASlowLayout() {
    auto model = chainModel(400, 1);
    ModelGraph graph(model, {});
    LayoutEngine engine;
    engine.setTimeLimitMs(1);
    QSignalSpy failed(&engine, &LayoutEngine::failed);
    QSignalSpy done(&engine, &LayoutEngine::finished);
    engine.request(graph.layoutGraph());
    QVERIFY(failed.wait(5000));
    QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("longer than")));
    QTest::qWait(50);
    QCOMPARE(done.size(), 0);
  }

  void newerRequestSupersedesAndCancelIsSilent() {
    auto big = chainModel(300, 1);
    auto small = chainModel(3, 1);
    ModelGraph bigGraph(big, {});
    ModelGraph smallGraph(small, {});
    LayoutEngine engine;
    QSignalSpy done(&engine, &LayoutEngine::finished);
    QSignalSpy failed(&engine, &LayoutEngine::failed);
    const quint64 first = engine.request(bigGraph.layoutGraph());
    const quint64 second = engine.request(smallGraph.layoutGraph());
    QVERIFY(second > first);
    QVERIFY(done.wait(20000));
    QTest::qWait(100);
    QCOMPARE(done.size(), 1);
    QCOMPARE(done.first().at(0).value<quint64>(), second);

    engine.request(bigGraph.layoutGraph());
    engine.cancel();
    QVERIFY(!engine.busy());
    QTest::qWait(300);
    QCOMPARE(done.size(), 1);
    QCOMPARE(failed.size(), 0);
  }

  void modelGraphCollapsesAndExpands() {
    auto model = chainModel(6, 3, 3);
    ModelGraph collapsed(model, {});
    // x, two stages, one output.
    QCOMPARE(collapsed.nodes().size(), std::size_t(4));
    QCOMPARE(collapsed.layoutGraph().clusters.size(), std::size_t(0));
    const int stage0 = collapsed.nodeById(ModelGraph::moduleId("stage0"));
    QVERIFY(stage0 >= 0);
    QCOMPARE(collapsed.nodes()[stage0].opCount, std::int64_t(9));
    QCOMPARE(collapsed.nodes()[stage0].values.size(), std::size_t(9));
    QCOMPARE(collapsed.nodeOfOp(0), stage0);
    QCOMPARE(collapsed.layoutGraph().edges.size(), std::size_t(3));  // x->s0->s1->out

    ModelGraph open(model, {"stage0", "stage0.block"});
    QCOMPARE(open.layoutGraph().clusters.size(), std::size_t(2));
    QCOMPARE(open.layoutGraph().clusters[1].parent, ModelGraph::clusterId("stage0"));
    QCOMPARE(open.nodes()[open.nodeOfOp(0)].kind, VisualNode::Kind::op);
    QCOMPARE(open.nodes()[open.nodeOfOp(0)].subtitle, std::string("add0"));
    QCOMPARE(open.nodes()[open.nodeOfOp(3)].kind, VisualNode::Kind::module);
    QCOMPARE(open.moduleOf(ModelGraph::clusterId("stage0")), std::string("stage0"));
    QCOMPARE(open.clusterByModule("stage0.block"), 1);
  }

  void initialExpansionStaysWithinBudget() {
    // HeavyModel's shape: 1000 blocks of 100 ops directly under the root.
    auto heavy = chainModel(1000, 100);
    auto expansion = ModelGraph::initialExpansion(*heavy, 260);
    QCOMPARE(expansion, std::set<std::string>{""});
    ModelGraph graph(heavy, expansion);
    QCOMPARE(graph.nodes().size(), std::size_t(1002));
    QCOMPARE(graph.layoutGraph().clusters.size(), std::size_t(0));

    auto small = chainModel(4, 5, 2);
    auto all = ModelGraph::initialExpansion(*small, 260);
    QVERIFY(all.count("stage0") && all.count("stage1.block_3"));
  }
};

QTEST_MAIN(TestLayout)
#include "test_layout.moc"
