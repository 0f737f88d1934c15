#pragma once

// What the graph view shows of a Model for one expansion state: expanded modules become
// clusters (nested as the module tree), collapsed modules single nodes, the rest op nodes.
// Qt-free; the view turns it into items, the layout engine into positions.

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/model/model.hpp"
#include "ui/layout/layout_types.hpp"

namespace ckpt::ui {

struct VisualNode {
  enum class Kind : std::uint8_t { op, module, input, output };
  Kind kind = Kind::op;
  std::string id;        // layout id
  std::string title;     // first line: op type, module name, input name
  std::string subtitle;  // second line: op name, module kind and op count, shape
  std::int64_t op = -1;  // op index for Kind::op (the first op of a collapsed module)
  std::string module;    // module path for Kind::module
  std::int64_t opCount = 0;
  std::vector<std::string> values;  // tensors whose state colours the node (op outputs)
  std::string cluster;              // enclosing cluster id ("" at the top)
};

struct VisualCluster {
  std::string id;      // layout id
  std::string module;  // module path
  std::string title;   // "denselayer1 · DenseLayer"
  int depth = 0;
};

class ModelGraph {
 public:
  ModelGraph() = default;
  // `expanded` lists the module paths drawn as clusters; the root is always expanded.
  ModelGraph(std::shared_ptr<const Model> model, std::set<std::string> expanded);

  // The expansion the app opens with: whole levels of the module tree are expanded while the
  // number of visible nodes stays within `budget`, so the first layout is fast.
  static std::set<std::string> initialExpansion(const Model& model, std::size_t budget = 260);

  const Model* model() const { return model_.get(); }
  const std::set<std::string>& expanded() const { return expanded_; }
  const LayoutGraph& layoutGraph() const { return layout_; }
  const std::vector<VisualNode>& nodes() const { return nodes_; }
  const std::vector<VisualCluster>& clusters() const { return clusters_; }
  // Index into nodes() of the node showing op `op`, -1 if none.
  int nodeOfOp(std::int64_t op) const;
  int nodeById(const std::string& id) const;
  // The module path for a node or cluster id ("" when it is neither a module nor a cluster).
  std::string moduleOf(const std::string& id) const;
  int clusterByModule(const std::string& path) const;

  static std::string opId(const std::string& opName) { return "op:" + opName; }
  static std::string moduleId(const std::string& path) { return "mod:" + path; }
  static std::string clusterId(const std::string& path) { return "cl:" + path; }

 private:
  void build();
  void addNode(VisualNode node, double width, double height);
  // Returns the inputs' names, which edges from the inputs are drawn from.
  std::set<std::string> addInputNodes();
  void addCluster(const Module& module, const std::string& parentCluster);
  void addOpNode(std::int64_t op, const std::string& cluster);
  // A collapsed module: one node for `ops`, its ops in execution order.
  void addModuleNode(const Module& module, const std::vector<std::int64_t>& ops,
                     const std::string& cluster);
  void addEdgesAndOutputs(const std::set<std::string>& inputNames);

  std::shared_ptr<const Model> model_;
  std::set<std::string> expanded_;
  LayoutGraph layout_;
  std::vector<VisualNode> nodes_;
  std::vector<VisualCluster> clusters_;
  std::vector<int> nodeOfOp_;
  std::unordered_map<std::string, int> nodeIndex_;
  std::unordered_map<std::string, int> clusterIndex_;
};

// Module lookups that do not depend on Model's own (so the view works over any module tree).
const Module* findModule(const Module& root, const std::string& path);
void forEachModule(const Module& root, const std::function<void(const Module&, int depth)>& fn);
std::string shortOpName(const std::string& opName, const std::string& modulePath);

}  // namespace ckpt::ui
