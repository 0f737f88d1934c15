// GraphView: the graph at the player's cursor. Each node's counts of tensors per activation
// state are moved along the run's state timeline (forward or back, only the changes between the
// old and the new step), the op at the cursor is highlighted and the segment being recomputed
// lit up; the checkpointed modules and the selected op are marked.

#include "ui/graph/graph_view.hpp"

namespace ckpt::ui {

namespace {

std::string parentPath(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

}  // namespace

void GraphView::setTrace(std::shared_ptr<const Trace> trace,
                         std::shared_ptr<const StateTimeline> timeline) {
  trace_ = std::move(trace);
  timeline_ = std::move(timeline);
  if (trace_ && !timeline_ && graph_)
    timeline_ =
        std::make_shared<const StateTimeline>(build_state_timeline(*graph_->model(), *trace_));
  resolveTensors();
  resetCounts();
  updateStates();
}

void GraphView::resolveTensors() {
  nodeTensors_.assign(nodes_.size(), {});
  if (!graph_ || !trace_) return;
  const auto& vnodes = graph_->nodes();
  for (std::size_t i = 0; i < vnodes.size(); ++i) {
    if (vnodes[i].kind != VisualNode::Kind::input && vnodes[i].kind != VisualNode::Kind::output)
      continue;
    for (const auto& v : vnodes[i].values)
      if (std::int64_t t = trace_->tensor_index(v); t >= 0) nodeTensors_[i].push_back(t);
  }
}

// All op outputs pending (before the first step), then the timeline up to the cursor.
void GraphView::resetCounts() {
  counts_.assign(nodes_.size(), NodeItem::StateCounts{});
  applied_ = 0;
  dirty_.clear();
  for (std::size_t i = 0; i < nodes_.size(); ++i) dirty_.push_back(static_cast<int>(i));
  if (!timeline_ || !graph_) return;
  const auto pending = static_cast<std::size_t>(ActivationState::pending);
  for (std::size_t op = 0; op < timeline_->tensors_per_op.size(); ++op) {
    const int node = graph_->nodeOfOp(static_cast<std::int64_t>(op));
    if (node >= 0)
      counts_[static_cast<std::size_t>(node)][pending] += timeline_->tensors_per_op[op];
  }
}

void GraphView::moveCounts(std::int64_t step) {
  if (!timeline_ || !graph_) return;
  const auto& changes = timeline_->changes;
  auto apply = [&](const StateChange& c, bool forward) {
    const int node = graph_->nodeOfOp(c.op);
    if (node < 0) return;
    auto& counts = counts_[static_cast<std::size_t>(node)];
    --counts[static_cast<std::size_t>(forward ? c.from : c.to)];
    ++counts[static_cast<std::size_t>(forward ? c.to : c.from)];
    dirty_.push_back(node);
  };
  while (applied_ < changes.size() && changes[applied_].step <= step)
    apply(changes[applied_++], true);
  while (applied_ > 0 && changes[applied_ - 1].step > step) apply(changes[--applied_], false);
}

void GraphView::setCursorStep(std::int64_t step) {
  cursor_ = step;
  updateStates();
}

NodeItem::StateCounts GraphView::statesOf(int node) const {
  NodeItem::StateCounts counts{};
  if (!trace_ || node < 0 || node >= static_cast<int>(counts_.size())) return counts;
  const auto& tensors = nodeTensors_[static_cast<std::size_t>(node)];
  if (tensors.empty()) return counts_[static_cast<std::size_t>(node)];
  if (cursor_ < 0 || cursor_ >= trace_->step_count()) return counts;
  for (std::int64_t t : tensors) ++counts[static_cast<std::size_t>(trace_->state_at(t, cursor_))];
  return counts;
}

void GraphView::updateStates() {
  const bool valid = trace_ && cursor_ >= 0 && cursor_ < trace_->step_count();
  moveCounts(valid ? cursor_ : -1);
  for (std::size_t i = 0; i < nodeTensors_.size(); ++i)
    if (!nodeTensors_[i].empty()) dirty_.push_back(static_cast<int>(i));
  for (int i : dirty_)
    if (NodeItem* n = nodes_[static_cast<std::size_t>(i)]) n->setStates(statesOf(i));
  dirty_.clear();

  int current = -1;
  QGraphicsItem* recomputing = nullptr;
  QString recomputingModule;
  if (valid && graph_) {
    const TraceStep step = trace_->step(cursor_);
    if (const std::int64_t op = timeline_ ? timeline_->op_at(cursor_) : -1; op >= 0)
      current = graph_->nodeOfOp(op);
    if (step.phase == Phase::recompute && !step.segment.empty()) {
      recomputingModule = QString::fromStdString(step.segment);
      // The innermost visible thing showing the segment: its cluster, or the collapsed
      // module node that contains it.
      for (std::string path = step.segment; !path.empty(); path = parentPath(path)) {
        if (auto c = clusters_.find(path); c != clusters_.end()) {
          recomputing = c->second;
          break;
        }
        if (int n = graph_->nodeById(ModelGraph::moduleId(path)); n >= 0 && nodes_[n]) {
          recomputing = nodes_[static_cast<std::size_t>(n)];
          break;
        }
      }
    }
  }
  if (current != currentNode_) {
    if (currentNode_ >= 0 && nodes_[static_cast<std::size_t>(currentNode_)])
      nodes_[static_cast<std::size_t>(currentNode_)]->setCurrent(false);
    currentNode_ = current;
    if (current >= 0 && nodes_[static_cast<std::size_t>(current)]) {
      NodeItem* item = nodes_[static_cast<std::size_t>(current)];
      item->setCurrent(true);
      if (follow_) {
        const QRectF visible = mapToScene(viewport()->rect()).boundingRect();
        if (!visible.contains(item->sceneBoundingRect())) centerOn(item);
      }
    }
  }
  if (recomputing != recomputingItem_) {
    if (auto* c = qgraphicsitem_cast<ClusterItem*>(recomputingItem_)) c->setRecomputing(false);
    if (auto* n = qgraphicsitem_cast<NodeItem*>(recomputingItem_)) n->setRecomputing(false);
    recomputingItem_ = recomputing;
    if (auto* c = qgraphicsitem_cast<ClusterItem*>(recomputing)) c->setRecomputing(true);
    if (auto* n = qgraphicsitem_cast<NodeItem*>(recomputing)) n->setRecomputing(true);
  }
  recomputing_ = recomputingModule;
}

void GraphView::setCheckpointed(const std::set<std::string>& modules) {
  checkpointed_ = modules;
  for (auto& [path, item] : clusters_) item->setCheckpointed(modules.count(path) > 0);
  for (NodeItem* n : nodes_)
    if (n && n->kind() == VisualNode::Kind::module)
      n->setCheckpointed(modules.count(n->module().toStdString()) > 0);
}

void GraphView::setSelectedOp(std::int64_t op) {
  selectedOp_ = op;
  const int node = graph_ ? graph_->nodeOfOp(op) : -1;
  for (NodeItem* n : nodes_)
    if (n) n->setSelected(n->index() == node);
}

}  // namespace ckpt::ui
