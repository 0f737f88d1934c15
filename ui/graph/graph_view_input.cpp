// GraphView: the mouse and the zoom. A click toggles a module's checkpointing (or selects an
// op), a drag pans, a double-click expands or collapses (undoing the toggle its first click
// made), the wheel zooms; the hovered cluster or node is marked.

#include <QApplication>
#include <QDateTime>
#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "ui/graph/graph_view.hpp"

namespace ckpt::ui {

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

}  // namespace ckpt::ui
