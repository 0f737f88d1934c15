#include "ui/core/model_graph.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace ckpt::ui {

namespace {

// Text width estimate in points for the 8.5 pt UI font the view uses; the view centres its
// text in the box dot reserved, so an estimate that errs wide is enough.
double textWidth(const std::string& s) {
  return 6.2 * static_cast<double>(s.size());
}

bool isAtomic(const Module& m) {
  return m.children.empty() && m.end_op - m.first_op <= 1;
}

struct Index {
  std::map<std::string, const Module*> modules;
  std::map<std::string, std::vector<std::int64_t>> directOps;
};

Index buildIndex(const Model& model) {
  Index idx;
  forEachModule(model.root, [&](const Module& m, int) { idx.modules[m.path] = &m; });
  for (std::size_t i = 0; i < model.ops.size(); ++i)
    idx.directOps[model.ops[i].module].push_back(static_cast<std::int64_t>(i));
  return idx;
}

void collectOps(const Module& m, const Index& idx, std::vector<std::int64_t>& out) {
  std::vector<const Module*> stack{&m};
  while (!stack.empty()) {
    const Module* cur = stack.back();
    stack.pop_back();
    if (auto it = idx.directOps.find(cur->path); it != idx.directOps.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
    for (const auto& c : cur->children) stack.push_back(c.get());
  }
  std::sort(out.begin(), out.end());
}

}  // namespace

const Module* findModule(const Module& root, const std::string& path) {
  if (path == root.path) return &root;
  const Module* cur = &root;
  while (cur) {
    const Module* next = nullptr;
    for (const auto& c : cur->children) {
      if (c->path == path) return c.get();
      if (path.size() > c->path.size() && path.starts_with(c->path) &&
          path[c->path.size()] == '.') {
        next = c.get();
        break;
      }
    }
    cur = next;
  }
  return nullptr;
}

void forEachModule(const Module& root, const std::function<void(const Module&, int)>& fn) {
  std::vector<std::pair<const Module*, int>> stack{{&root, 0}};
  while (!stack.empty()) {
    auto [m, depth] = stack.back();
    stack.pop_back();
    fn(*m, depth);
    for (auto it = m->children.rbegin(); it != m->children.rend(); ++it)
      stack.push_back({it->get(), depth + 1});
  }
}

std::string shortOpName(const std::string& opName, const std::string& modulePath) {
  if (!modulePath.empty() && opName.size() > modulePath.size() + 1 &&
      opName.starts_with(modulePath) && opName[modulePath.size()] == '.')
    return opName.substr(modulePath.size() + 1);
  return opName;
}

ModelGraph::ModelGraph(std::shared_ptr<const Model> model, std::set<std::string> expanded)
    : model_(std::move(model)), expanded_(std::move(expanded)) {
  if (!model_) throw std::invalid_argument("ModelGraph: no model");
  build();
}

std::set<std::string> ModelGraph::initialExpansion(const Model& model, std::size_t budget) {
  // Visible nodes when every module down to depth d is expanded.
  std::map<int, std::vector<const Module*>> byDepth;
  forEachModule(model.root, [&](const Module& m, int depth) { byDepth[depth].push_back(&m); });
  std::unordered_map<std::string, std::size_t> directOps;
  for (const auto& op : model.ops) ++directOps[op.module];
  std::set<std::string> expanded;
  std::size_t visible = 1;  // the root, collapsed
  for (auto& [depth, modules] : byDepth) {
    std::size_t grown = visible;
    for (const Module* m : modules) {
      if (isAtomic(*m)) continue;
      auto direct = directOps.find(m->path);
      grown += m->children.size() + (direct == directOps.end() ? 0 : direct->second) - 1;
    }
    if (depth > 0 && grown > budget) break;
    visible = grown;
    for (const Module* m : modules)
      if (!isAtomic(*m)) expanded.insert(m->path);
  }
  return expanded;
}

void ModelGraph::build() {
  const Model& model = *model_;
  const Index idx = buildIndex(model);
  nodeOfOp_.assign(model.ops.size(), -1);

  auto addCollapsed = [&](const Module& m, const std::string& cluster) {
    std::vector<std::int64_t> ops;
    collectOps(m, idx, ops);
    addModuleNode(m, ops, cluster);
  };

  // Inputs first so that dot ranks them on top.
  const std::set<std::string> inputNames = addInputNodes();

  // Expanded modules become clusters; walk in execution order so dot keeps that order.
  struct Item {
    std::int64_t order;
    const Module* module;  // null for an op
    std::int64_t op;
  };
  std::vector<std::pair<const Module*, std::string>> stack{{&model.root, std::string()}};
  while (!stack.empty()) {
    auto [m, parentCluster] = stack.back();
    stack.pop_back();
    std::string cluster;
    if (m != &model.root) {
      cluster = clusterId(m->path);
      addCluster(*m, parentCluster);
    }
    std::vector<Item> items;
    if (auto it = idx.directOps.find(m->path); it != idx.directOps.end())
      for (std::int64_t i : it->second) items.push_back({i, nullptr, i});
    for (const auto& c : m->children) {
      std::vector<std::int64_t> ops;
      collectOps(*c, idx, ops);
      items.push_back({ops.empty() ? c->first_op : ops.front(), c.get(), -1});
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return a.order < b.order; });
    std::vector<const Module*> expandLater;
    for (const Item& item : items) {
      if (!item.module) {
        addOpNode(item.op, cluster);
      } else if (expanded_.count(item.module->path) && !isAtomic(*item.module)) {
        expandLater.push_back(item.module);
      } else {
        addCollapsed(*item.module, cluster);
      }
    }
    for (auto it = expandLater.rbegin(); it != expandLater.rend(); ++it)
      stack.push_back({*it, cluster});
  }

  addEdgesAndOutputs(inputNames);
}

void ModelGraph::addNode(VisualNode n, double width, double height) {
  nodeIndex_[n.id] = static_cast<int>(nodes_.size());
  layout_.nodes.push_back({n.id, width, height, n.cluster});
  nodes_.push_back(std::move(n));
}

std::set<std::string> ModelGraph::addInputNodes() {
  std::set<std::string> inputNames;
  for (const auto& in : model_->inputs) {
    inputNames.insert(in.name);
    VisualNode n;
    n.kind = VisualNode::Kind::input;
    n.id = "in:" + in.name;
    n.title = in.name;
    n.subtitle = in.requires_grad ? "input · requires grad" : "input";
    n.values = {in.name};
    const double w = std::max(80.0, textWidth(n.subtitle) + 18);
    addNode(std::move(n), w, 30);
  }
  return inputNames;
}

void ModelGraph::addCluster(const Module& m, const std::string& parentCluster) {
  const std::string cluster = clusterId(m.path);
  int depth = static_cast<int>(std::count(m.path.begin(), m.path.end(), '.'));
  clusterIndex_[cluster] = static_cast<int>(clusters_.size());
  std::string title = m.kind.empty() ? m.name : m.name + " · " + m.kind;
  clusters_.push_back({cluster, m.path, title, depth});
  // The label only reserves room: the view draws the title, a collapse button and a
  // "checkpoint" badge in the cluster's title bar.
  layout_.clusters.push_back({cluster, title + "      [checkpoint]", parentCluster});
}

void ModelGraph::addOpNode(std::int64_t i, const std::string& cluster) {
  const OpNode& op = model_->ops[static_cast<std::size_t>(i)];
  VisualNode n;
  n.kind = VisualNode::Kind::op;
  n.id = opId(op.name);
  n.title = op.op_type;
  n.subtitle = shortOpName(op.name, op.module);
  n.op = i;
  n.opCount = 1;
  n.values = op.outputs;
  n.cluster = cluster;
  nodeOfOp_[static_cast<std::size_t>(i)] = static_cast<int>(nodes_.size());
  const double w = std::max({64.0, textWidth(n.title) + 18, textWidth(n.subtitle) + 18});
  addNode(std::move(n), std::min(w, 190.0), 34);
}

void ModelGraph::addModuleNode(const Module& m, const std::vector<std::int64_t>& ops,
                               const std::string& cluster) {
  const Model& model = *model_;
  VisualNode n;
  n.kind = VisualNode::Kind::module;
  n.id = moduleId(m.path);
  n.module = m.path;
  n.cluster = cluster;
  n.opCount = static_cast<std::int64_t>(ops.size());
  n.op = ops.empty() ? -1 : ops.front();
  if (isAtomic(m) && !ops.empty()) {
    n.title = model.ops[static_cast<std::size_t>(ops.front())].op_type;
    n.subtitle = m.name;
  } else {
    n.title = m.name;
    n.subtitle = m.kind + " · " + std::to_string(ops.size()) + (ops.size() == 1 ? " op" : " ops");
  }
  for (std::int64_t i : ops) {
    const auto& outs = model.ops[static_cast<std::size_t>(i)].outputs;
    n.values.insert(n.values.end(), outs.begin(), outs.end());
    nodeOfOp_[static_cast<std::size_t>(i)] = static_cast<int>(nodes_.size());
  }
  const double w = std::max({72.0, textWidth(n.title) + 22, textWidth(n.subtitle) + 22});
  addNode(std::move(n), std::min(w, 220.0), isAtomic(m) ? 34 : 42);
}

// Edges between visible nodes, deduplicated; each model output gets a node after its producer.
void ModelGraph::addEdgesAndOutputs(const std::set<std::string>& inputNames) {
  const Model& model = *model_;
  std::unordered_map<std::string, std::int64_t> producer;
  for (std::size_t i = 0; i < model.ops.size(); ++i)
    for (const auto& out : model.ops[i].outputs)
      if (!out.empty()) producer[out] = static_cast<std::int64_t>(i);
  std::set<std::pair<int, int>> seen;
  auto addEdge = [&](int tail, int head) {
    if (tail < 0 || head < 0 || tail == head) return;
    if (!seen.insert({tail, head}).second) return;
    layout_.edges.push_back(
        {nodes_[static_cast<std::size_t>(tail)].id, nodes_[static_cast<std::size_t>(head)].id});
  };
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    int head = nodeOfOp_[i];
    for (const auto& in : model.ops[i].inputs) {
      if (in.empty()) continue;
      if (auto p = producer.find(in); p != producer.end())
        addEdge(nodeOfOp_[static_cast<std::size_t>(p->second)], head);
      else if (inputNames.count(in))
        addEdge(nodeIndex_.at("in:" + in), head);
    }
  }
  for (const auto& out : model.outputs) {
    auto p = producer.find(out);
    if (p == producer.end()) continue;
    VisualNode n;
    n.kind = VisualNode::Kind::output;
    n.id = "out:" + out;
    n.title = out;
    n.subtitle = "output";
    n.values = {out};
    const double w = std::max(72.0, textWidth(out) + 18);
    addNode(std::move(n), w, 28);
    addEdge(nodeOfOp_[static_cast<std::size_t>(p->second)], static_cast<int>(nodes_.size()) - 1);
  }
}

int ModelGraph::nodeOfOp(std::int64_t op) const {
  if (op < 0 || op >= static_cast<std::int64_t>(nodeOfOp_.size())) return -1;
  return nodeOfOp_[static_cast<std::size_t>(op)];
}

int ModelGraph::nodeById(const std::string& id) const {
  auto it = nodeIndex_.find(id);
  return it == nodeIndex_.end() ? -1 : it->second;
}

int ModelGraph::clusterByModule(const std::string& path) const {
  auto it = clusterIndex_.find(clusterId(path));
  return it == clusterIndex_.end() ? -1 : it->second;
}

std::string ModelGraph::moduleOf(const std::string& id) const {
  if (id.starts_with("mod:")) return id.substr(4);
  if (id.starts_with("cl:")) return id.substr(3);
  return {};
}

}  // namespace ckpt::ui
