#include "ui/graph/graph_view.hpp"

#include <QApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <algorithm>

#include <cmath>
#include "ui/graph/state_legend.hpp"

namespace ckpt::ui {

namespace {

QString html(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

std::string parentPath(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  style_.palette = Palette::forApplication();
  setScene(new QGraphicsScene(this));
  setRenderHint(QPainter::Antialiasing, true);
  setRenderHint(QPainter::TextAntialiasing, true);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setDragMode(QGraphicsView::NoDrag);
  setMouseTracking(true);
  setBackgroundBrush(style_.palette.background);
  setFocusPolicy(Qt::ClickFocus);
  overlay_ = new QLabel(this);
  overlay_->setAlignment(Qt::AlignCenter);
  overlay_->setWordWrap(true);
  overlay_->hide();
  legend_ = new StateLegend(this);
  legend_->setLegendPalette(style_.palette);
}

GraphView::~GraphView() = default;

void GraphView::setGraphPalette(const Palette& palette) {
  style_.palette = palette;
  setBackgroundBrush(palette.background);
  legend_->setLegendPalette(palette);
  scene()->update();
  setOverlayText(overlay_->text(), overlay_->property("error").toBool());
}

void GraphView::setGraph(std::shared_ptr<const ModelGraph> graph, LayoutResultPtr layout) {
  graph_ = std::move(graph);
  layout_ = std::move(layout);
  rebuildScene();
}

void GraphView::clearGraph() {
  setGraph(nullptr, nullptr);
}

void GraphView::rebuildScene() {
  hovered_ = nullptr;
  recomputingItem_ = nullptr;
  recomputing_.clear();
  currentNode_ = -1;
  nodes_.clear();
  clusters_.clear();
  scene()->clear();
  if (!graph_ || !layout_) {
    scene()->setSceneRect(QRectF());
    return;
  }
  const Model& model = *graph_->model();
  std::unordered_map<std::string, const Module*> modules;
  forEachModule(model.root, [&](const Module& m, int) { modules.emplace(m.path, &m); });
  auto moduleAt = [&](const std::string& path) -> const Module* {
    auto it = modules.find(path);
    return it == modules.end() ? nullptr : it->second;
  };
  for (const auto& c : graph_->clusters()) {
    auto it = layout_->clusters.find(c.id);
    if (it == layout_->clusters.end()) continue;
    const Module* m = moduleAt(c.module);
    const bool ok = m && m->checkpointable;
    const QString reason = m ? QString::fromStdString(m->not_checkpointable_reason) : QString();
    auto* item =
        new ClusterItem(c, QRectF(it->second.x, it->second.y, it->second.width, it->second.height),
                        &style_, ok, reason);
    QString tip = QStringLiteral("<b>%1</b>").arg(html(c.module));
    if (m) tip += QStringLiteral(" · %1").arg(html(m->kind));
    tip += ok ? tr("<br>Click to checkpoint it (or stop). Double-click or − to collapse.")
              : tr("<br>Cannot be checkpointed: %1").arg(reason.toHtmlEscaped());
    item->setToolTip(tip);
    scene()->addItem(item);
    clusters_[c.module] = item;
  }
  const auto& vnodes = graph_->nodes();
  nodes_.assign(vnodes.size(), nullptr);
  for (std::size_t i = 0; i < vnodes.size(); ++i) {
    const VisualNode& n = vnodes[i];
    auto it = layout_->nodes.find(n.id);
    if (it == layout_->nodes.end()) continue;
    auto* item = new NodeItem(
        static_cast<int>(i), n,
        QRectF(it->second.x, it->second.y, it->second.width, it->second.height), &style_);
    QString tip;
    if (n.kind == VisualNode::Kind::module) {
      const Module* m = moduleAt(n.module);
      item->setCheckpointable(m && m->checkpointable);
      tip = QStringLiteral("<b>%1</b> · %2<br>%3 ops")
                .arg(html(n.module), m ? html(m->kind) : QString())
                .arg(n.opCount);
      if (m && !m->checkpointable)
        tip += tr("<br>Cannot be checkpointed: %1")
                   .arg(QString::fromStdString(m->not_checkpointable_reason).toHtmlEscaped());
      else
        tip += tr("<br>Click to checkpoint it (or stop).");
      if (n.opCount > 1) tip += tr(" Double-click or + to expand.");
    } else if (n.kind == VisualNode::Kind::op) {
      const OpNode& op = model.ops[static_cast<std::size_t>(n.op)];
      tip = QStringLiteral("<b>%1</b> · %2").arg(html(op.name), html(op.op_type));
      if (!op.module.empty()) tip += tr("<br>in %1").arg(html(op.module));
      tip += tr("<br>Click to inspect it.");
    } else {
      tip = QStringLiteral("<b>%1</b> · %2").arg(html(n.title), html(n.subtitle));
    }
    item->setToolTip(tip);
    scene()->addItem(item);
    nodes_[i] = item;
  }
  for (const auto& route : layout_->edges) {
    if (route.points.empty()) continue;
    scene()->addItem(new EdgeItem(route, &style_));
  }
  const auto& b = layout_->bounds;
  scene()->setSceneRect(QRectF(b.x, b.y, b.width, b.height).adjusted(-24, -24, 24, 24));
  resolveTensors();
  resetCounts();
  setCheckpointed(std::set<std::string>(checkpointed_));
  setSelectedOp(selectedOp_);
  updateStates();
  fitAll();
}

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

void GraphView::setOverlayText(const QString& text, bool isError) {
  overlay_->setText(text);
  overlay_->setProperty("error", isError);
  const Palette& pal = style_.palette;
  overlay_->setStyleSheet(QStringLiteral("QLabel { background: %1; color: %2; border: 1px solid %3;"
                                         " border-radius: 6px; padding: 8px 14px; }")
                              .arg(pal.surface.name(), (isError ? pal.error : pal.text).name(),
                                   (isError ? pal.error : pal.grid).name()));
  overlay_->setVisible(!text.isEmpty());
  placeOverlay();
}

QString GraphView::overlayText() const {
  return overlay_->isVisible() ? overlay_->text() : QString();
}

void GraphView::placeOverlay() {
  const int scrollbar = verticalScrollBar()->isVisible() ? verticalScrollBar()->width() : 0;
  legend_->resize(legend_->sizeHint());
  const int legendLeft = width() - legend_->width() - scrollbar - 10;
  legend_->move(legendLeft, 10);
  legend_->raise();
  // The message goes left of the legend, never under it; below it where the view is too narrow.
  const int beside = legendLeft - 20;
  const bool fitsBeside = beside >= 240;
  const int room = fitsBeside ? beside : viewport()->width() - 20;
  overlay_->setFixedWidth(std::max(120, std::min(room, 520)));
  overlay_->adjustSize();
  if (fitsBeside)
    overlay_->move(10 + (beside - overlay_->width()) / 2, 14);
  else
    overlay_->move((width() - overlay_->width()) / 2, legend_->y() + legend_->height() + 10);
  overlay_->raise();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  placeOverlay();
}

void GraphView::applyScale(double factor) {
  const double current = transform().m11();
  const double target = std::clamp(current * factor, 0.02, 4.0);
  scale(target / current, target / current);
}

void GraphView::zoomIn() {
  applyScale(1.25);
}
void GraphView::zoomOut() {
  applyScale(1 / 1.25);
}

// Fits the whole graph unless that makes it unreadable (a long chain such as HeavyModel's):
// then it shows the start at a readable scale and the player follows the cursor.
void GraphView::fitAll() {
  const QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return;
  resetTransform();
  const double sx = viewport()->width() / r.width();
  const double sy = viewport()->height() / r.height();
  const double s = std::min({sx, sy, 1.4});
  if (s >= 0.45) {
    scale(s, s);
    centerOn(r.center());
    return;
  }
  const double readable = std::min(0.8, std::max(sx, 0.45));
  scale(readable, readable);
  centerOn(QPointF(r.center().x(), r.top() + viewport()->height() / (2 * readable)));
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  applyScale(std::pow(1.18, steps));
  event->accept();
}

QGraphicsItem* GraphView::interactiveItemAt(const QPoint& viewPos) const {
  for (QGraphicsItem* item : items(viewPos)) {
    if (item->type() == NodeItem::Type || item->type() == ClusterItem::Type) return item;
  }
  return nullptr;
}

void GraphView::setHovered(QGraphicsItem* item) {
  if (item == hovered_) return;
  if (auto* c = qgraphicsitem_cast<ClusterItem*>(hovered_)) c->setHovered(false);
  if (auto* n = qgraphicsitem_cast<NodeItem*>(hovered_)) n->setHovered(false);
  hovered_ = item;
  if (auto* c = qgraphicsitem_cast<ClusterItem*>(item)) c->setHovered(true);
  if (auto* n = qgraphicsitem_cast<NodeItem*>(item)) n->setHovered(true);
  viewport()->setCursor(item && (item->type() == ClusterItem::Type ||
                                 static_cast<NodeItem*>(item)->kind() == VisualNode::Kind::module)
                            ? Qt::PointingHandCursor
                            : Qt::ArrowCursor);
}

void GraphView::leaveEvent(QEvent* event) {
  setHovered(nullptr);
  QGraphicsView::leaveEvent(event);
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) {
    QGraphicsView::mousePressEvent(event);
    return;
  }
  pressed_ = true;
  panning_ = false;
  pressPos_ = event->position().toPoint();
  event->accept();
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (pressed_) {
    if (!panning_ && (pos - pressPos_).manhattanLength() > QApplication::startDragDistance()) {
      panning_ = true;
      viewport()->setCursor(Qt::ClosedHandCursor);
    }
    if (panning_) {
      const QPoint delta = pos - pressPos_;
      pressPos_ = pos;
      horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
      verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
    }
    event->accept();
    return;
  }
  setHovered(interactiveItemAt(pos));
  QGraphicsView::mouseMoveEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !pressed_) {
    QGraphicsView::mouseReleaseEvent(event);
    return;
  }
  pressed_ = false;
  const bool wasPanning = panning_;
  panning_ = false;
  if (wasPanning) {
    setHovered(nullptr);
    setHovered(interactiveItemAt(event->position().toPoint()));
    return;
  }
  if (swallowRelease_) {
    swallowRelease_ = false;
    return;
  }
  const QPoint pos = event->position().toPoint();
  click(interactiveItemAt(pos), mapToScene(pos));
}

void GraphView::click(QGraphicsItem* item, const QPointF& scenePos) {
  if (auto* cluster = qgraphicsitem_cast<ClusterItem*>(item)) {
    if (cluster->collapseButtonRect().adjusted(-3, -3, 3, 3).contains(scenePos)) {
      emit collapseRequested(cluster->module());
      return;
    }
    emit moduleSelected(cluster->module());
    if (!cluster->checkpointable()) {
      emit message(tr("%1 cannot be checkpointed: %2").arg(cluster->module(), cluster->reason()));
      return;
    }
    lastToggled_ = cluster->module();
    lastToggleMs_ = QDateTime::currentMSecsSinceEpoch();
    emit moduleToggleRequested(cluster->module());
    return;
  }
  auto* node = qgraphicsitem_cast<NodeItem*>(item);
  if (!node) return;
  if (node->kind() == VisualNode::Kind::module) {
    if (node->expandable() && node->expandButtonRect().adjusted(-3, -3, 3, 3).contains(scenePos)) {
      emit expandRequested(node->module());
      return;
    }
    emit moduleSelected(node->module());
    const Module* m =
        graph_ ? findModule(graph_->model()->root, node->module().toStdString()) : nullptr;
    if (m && !m->checkpointable) {
      emit message(tr("%1 cannot be checkpointed: %2")
                       .arg(node->module(), QString::fromStdString(m->not_checkpointable_reason)));
      return;
    }
    lastToggled_ = node->module();
    lastToggleMs_ = QDateTime::currentMSecsSinceEpoch();
    emit moduleToggleRequested(node->module());
    return;
  }
  if (node->kind() == VisualNode::Kind::op && graph_) {
    const std::int64_t op = graph_->nodes()[static_cast<std::size_t>(node->index())].op;
    setSelectedOp(op);
    emit opSelected(op);
  }
}

// A double-click arrives after a first click has already toggled the module: undo that
// toggle, then expand or collapse.
void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  swallowRelease_ = true;
  pressed_ = false;
  QGraphicsItem* item = interactiveItemAt(event->position().toPoint());
  QString module;
  bool expand = false;
  if (auto* cluster = qgraphicsitem_cast<ClusterItem*>(item)) {
    module = cluster->module();
  } else if (auto* node = qgraphicsitem_cast<NodeItem*>(item);
             node && node->kind() == VisualNode::Kind::module && node->expandable()) {
    module = node->module();
    expand = true;
  }
  if (module.isEmpty()) return;
  const qint64 now = QDateTime::currentMSecsSinceEpoch();
  if (module == lastToggled_ && now - lastToggleMs_ <= 2 * QApplication::doubleClickInterval())
    emit moduleToggleRequested(module);
  lastToggled_.clear();
  if (expand)
    emit expandRequested(module);
  else
    emit collapseRequested(module);
}

ClusterItem* GraphView::clusterItem(const QString& module) const {
  auto it = clusters_.find(module.toStdString());
  return it == clusters_.end() ? nullptr : it->second;
}

NodeItem* GraphView::nodeItem(int index) const {
  return index >= 0 && index < static_cast<int>(nodes_.size())
             ? nodes_[static_cast<std::size_t>(index)]
             : nullptr;
}

NodeItem* GraphView::nodeItemForOp(std::int64_t op) const {
  return graph_ ? nodeItem(graph_->nodeOfOp(op)) : nullptr;
}

bool GraphView::exportImage(const QString& path, QString* error) const {
  auto failWith = [&](const QString& m) {
    if (error) *error = m;
    return false;
  };
  const QRectF source = scene()->sceneRect();
  if (source.isEmpty()) return failWith(tr("%1: there is no graph to export").arg(path));
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(source.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
    svg.setTitle(QStringLiteral("Checkpoint Lab graph"));
    QPainter p;
    if (!p.begin(&svg)) return failWith(tr("%1: cannot write SVG").arg(path));
    p.fillRect(QRectF(QPointF(0, 0), source.size()), style_.palette.background);
    scene()->render(&p, QRectF(QPointF(0, 0), source.size()), source);
    p.end();
  } else if (suffix == QLatin1String("png")) {
    // Twice the scene's scale for sharp text, capped so a huge graph stays a sane file.
    const double scale = std::min(2.0, 16000.0 / std::max(source.width(), source.height()));
    const QSize size = (source.size() * scale).toSize().expandedTo(QSize(1, 1));
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    image.fill(style_.palette.background);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setRenderHint(QPainter::TextAntialiasing, true);
    scene()->render(&p, QRectF(QPointF(0, 0), QSizeF(size)), source);
    p.end();
    if (!image.save(path, "PNG")) return failWith(tr("%1: cannot write PNG").arg(path));
  } else {
    return failWith(tr("%1: unknown image format '%2' (use .png or .svg)").arg(path, suffix));
  }
  if (QFileInfo(path).size() == 0) return failWith(tr("%1: nothing was written").arg(path));
  return true;
}

}  // namespace ckpt::ui
