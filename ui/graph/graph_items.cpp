#include "ui/graph/graph_items.hpp"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>

namespace ckpt::ui {

namespace {

// Below this scale text is unreadable anyway; skipping it keeps big graphs fluid.
constexpr double kTextLod = 0.38;

double lodOf(const QPainter* p) {
  return QStyleOptionGraphicsItem::levelOfDetailFromTransform(p->worldTransform());
}

QFont uiFont(double points, bool bold = false) {
  QFont f;
  f.setPointSizeF(points);
  f.setBold(bold);
  return f;
}

void drawBadge(QPainter* p, const QPointF& topRight, const QString& text, const QColor& bg) {
  const QFont f = uiFont(7, true);
  const QFontMetricsF fm(f);
  const double w = fm.horizontalAdvance(text) + 10;
  const QRectF r(topRight.x() - w, topRight.y(), w, 14);
  p->setPen(Qt::NoPen);
  p->setBrush(bg);
  p->drawRoundedRect(r, 7, 7);
  p->setPen(Qt::white);
  p->setFont(f);
  p->drawText(r, Qt::AlignCenter, text);
}

void drawPlusMinus(QPainter* p, const QRectF& r, bool plus, const QColor& colour) {
  p->setPen(QPen(colour, 1));
  p->setBrush(Qt::NoBrush);
  p->drawRoundedRect(r, 2, 2);
  const QPointF c = r.center();
  p->drawLine(QPointF(r.left() + 3, c.y()), QPointF(r.right() - 3, c.y()));
  if (plus) p->drawLine(QPointF(c.x(), r.top() + 3), QPointF(c.x(), r.bottom() - 3));
}

// The split of a collapsed module's tensors between the states, as a bar along its foot.
void drawStateBar(QPainter* p, const QRectF& rect, const NodeItem::StateCounts& counts,
                  const Palette& pal) {
  std::int64_t total = 0;
  for (auto c : counts) total += c;
  if (total > 0) {
    const QRectF bar(rect.left() + 4, rect.bottom() - 9, rect.width() - 8, 5);
    double x = bar.left();
    static constexpr ActivationState order[] = {
        ActivationState::kept,       ActivationState::checkpoint_input,
        ActivationState::recomputed, ActivationState::dropped,
        ActivationState::freed,      ActivationState::pending};
    p->setPen(Qt::NoPen);
    for (ActivationState s : order) {
      const double w =
          bar.width() * counts[static_cast<std::size_t>(s)] / static_cast<double>(total);
      if (w <= 0) continue;
      p->setBrush(s == ActivationState::pending ? pal.grid : pal.state(s));
      p->drawRect(QRectF(x, bar.top(), w, bar.height()));
      x += w;
    }
    p->setPen(QPen(pal.grid, 0.8));
    p->setBrush(Qt::NoBrush);
    p->drawRect(bar);
  }
}

// The title, elided at its end, over the subtitle, elided in its middle (or the title alone,
// centred).
void drawTitles(QPainter* p, const QRectF& textRect, const QString& title, const QString& subtitle,
                const QColor& text) {
  const QFont titleFont = uiFont(8, true);
  const QFont subFont = uiFont(7);
  p->setPen(text);
  if (subtitle.isEmpty()) {
    p->setFont(titleFont);
    p->drawText(textRect, Qt::AlignCenter,
                QFontMetricsF(titleFont).elidedText(title, Qt::ElideRight, textRect.width()));
  } else {
    const double half = textRect.height() / 2;
    p->setFont(titleFont);
    p->drawText(QRectF(textRect.left(), textRect.top() + 1, textRect.width(), half),
                Qt::AlignHCenter | Qt::AlignBottom,
                QFontMetricsF(titleFont).elidedText(title, Qt::ElideRight, textRect.width()));
    p->setFont(subFont);
    QColor sub = text;
    sub.setAlphaF(0.8);
    p->setPen(sub);
    p->drawText(QRectF(textRect.left(), textRect.top() + half, textRect.width(), half),
                Qt::AlignHCenter | Qt::AlignTop,
                QFontMetricsF(subFont).elidedText(subtitle, Qt::ElideMiddle, textRect.width()));
  }
}

}  // namespace

// ---- ClusterItem -------------------------------------------------------------------------

ClusterItem::ClusterItem(const VisualCluster& cluster, const QRectF& rect, const GraphStyle* style,
                         bool checkpointable, QString reason)
    : rect_(rect),
      module_(QString::fromStdString(cluster.module)),
      title_(QString::fromStdString(cluster.title)),
      depth_(cluster.depth),
      style_(style),
      checkpointable_(checkpointable),
      reason_(std::move(reason)) {
  setZValue(-100 + depth_);
  setAcceptHoverEvents(false);
}

QRectF ClusterItem::boundingRect() const {
  return rect_.adjusted(-3, -3, 3, 3);
}

QRectF ClusterItem::collapseButtonRect() const {
  return QRectF(rect_.left() + 5, rect_.top() + 5, 11, 11);
}

void ClusterItem::setCheckpointed(bool on) {
  if (checkpointed_ == on) return;
  checkpointed_ = on;
  update();
}

void ClusterItem::setRecomputing(bool on) {
  if (recomputing_ == on) return;
  recomputing_ = on;
  update();
}

void ClusterItem::setHovered(bool on) {
  if (hovered_ == on) return;
  hovered_ = on;
  update();
}

void ClusterItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
  const Palette& pal = style_->palette;
  p->setRenderHint(QPainter::Antialiasing, true);
  QColor fill =
      pal.isDark ? pal.surface.lighter(100 + 7 * depth_) : pal.surface.darker(100 + 3 * depth_);
  if (checkpointed_) {
    QColor tint = pal.checkpointMark;
    tint.setAlphaF(0.10);
    p->setPen(Qt::NoPen);
    p->setBrush(fill);
    p->drawRoundedRect(rect_, 6, 6);
    fill = tint;
  }
  if (recomputing_) {
    QColor tint = pal.recomputeShade;
    tint.setAlphaF(0.22);
    fill = tint;
  }
  QPen border(pal.grid.darker(pal.isDark ? 70 : 115), 1);
  if (hovered_ && checkpointable_) border = QPen(pal.highlight, 1.6);
  if (checkpointed_) border = QPen(pal.checkpointMark, 2.4, Qt::DashLine);
  if (recomputing_) border = QPen(pal.recomputeShade, 3.2);
  p->setPen(border);
  p->setBrush(fill);
  p->drawRoundedRect(rect_, 6, 6);

  if (lodOf(p) < kTextLod) return;
  drawPlusMinus(p, collapseButtonRect(), false, pal.mutedText);
  double badgeWidth = 0;
  if (recomputing_ || checkpointed_) {
    const QString text = recomputing_ ? QObject::tr("recomputing") : QObject::tr("checkpoint");
    const QColor bg = recomputing_ ? pal.recomputeShade : pal.checkpointMark;
    drawBadge(p, QPointF(rect_.right() - 5, rect_.top() + 4), text, bg);
    badgeWidth = QFontMetricsF(uiFont(7, true)).horizontalAdvance(text) + 16;
  }
  const QFont f = uiFont(8, true);
  p->setFont(f);
  p->setPen(checkpointable_ ? pal.text : pal.mutedText);
  const QRectF titleRect(rect_.left() + 20, rect_.top() + 2, rect_.width() - 26 - badgeWidth, 18);
  p->drawText(titleRect, Qt::AlignLeft | Qt::AlignVCenter,
              QFontMetricsF(f).elidedText(title_, Qt::ElideRight, titleRect.width()));
}

// ---- NodeItem ----------------------------------------------------------------------------

NodeItem::NodeItem(int index, const VisualNode& node, const QRectF& rect, const GraphStyle* style)
    : rect_(rect),
      index_(index),
      kind_(node.kind),
      title_(QString::fromStdString(node.title)),
      subtitle_(QString::fromStdString(node.subtitle)),
      module_(QString::fromStdString(node.module)),
      opCount_(node.opCount),
      style_(style) {
  setZValue(10);
}

QRectF NodeItem::boundingRect() const {
  return rect_.adjusted(-7, -7, 7, 7);
}

QRectF NodeItem::expandButtonRect() const {
  return QRectF(rect_.right() - 14, rect_.top() + 3, 11, 11);
}

void NodeItem::setStates(const StateCounts& counts) {
  if (hasStates_ && counts == counts_) return;
  counts_ = counts;
  hasStates_ = true;
  update();
}

void NodeItem::setCurrent(bool on) {
  if (current_ == on) return;
  current_ = on;
  setZValue(on ? 20 : 10);
  update();
}

void NodeItem::setSelected(bool on) {
  if (selected_ == on) return;
  selected_ = on;
  update();
}

void NodeItem::setCheckpointed(bool on) {
  if (checkpointed_ == on) return;
  checkpointed_ = on;
  update();
}

void NodeItem::setHovered(bool on) {
  if (hovered_ == on) return;
  hovered_ = on;
  update();
}

void NodeItem::setRecomputing(bool on) {
  if (recomputing_ == on) return;
  recomputing_ = on;
  update();
}

ActivationState NodeItem::dominant() const {
  // Ties go to the most telling state: recomputed, then checkpoint input, kept, dropped.
  static constexpr ActivationState order[] = {
      ActivationState::recomputed, ActivationState::checkpoint_input,
      ActivationState::kept,       ActivationState::dropped,
      ActivationState::freed,      ActivationState::pending};
  ActivationState best = ActivationState::pending;
  std::int32_t bestCount = 0;
  for (ActivationState s : order) {
    const std::int32_t c = counts_[static_cast<std::size_t>(s)];
    if (c > bestCount) {
      best = s;
      bestCount = c;
    }
  }
  return best;
}

void NodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
  const Palette& pal = style_->palette;
  p->setRenderHint(QPainter::Antialiasing, true);
  const bool aggregate = kind_ == VisualNode::Kind::module && opCount_ > 1;
  const ActivationState state = dominant();
  const double radius = (kind_ == VisualNode::Kind::input || kind_ == VisualNode::Kind::output)
                            ? rect_.height() / 2
                            : 5;

  QColor fill = hasStates_ ? pal.state(state) : pal.background;
  QColor text = hasStates_ ? pal.stateText(state) : pal.text;
  if (aggregate) {
    fill = pal.background;
    text = pal.text;
  }
  if (kind_ == VisualNode::Kind::input) {
    fill = pal.category(MemoryCategory::input).lighter(pal.isDark ? 80 : 150);
    text = pal.text;
  } else if (kind_ == VisualNode::Kind::output) {
    fill = pal.surface;
    text = pal.text;
  }
  QPen border(pal.edge, 1);
  if (hasStates_ && !aggregate && state == ActivationState::pending)
    border = QPen(pal.mutedText, 1, Qt::DashLine);
  if (hovered_ && kind_ == VisualNode::Kind::module && checkpointable_)
    border = QPen(pal.highlight, 1.6);
  if (checkpointed_) border = QPen(pal.checkpointMark, 2.2, Qt::DashLine);
  if (recomputing_) border = QPen(pal.recomputeShade, 3);
  p->setPen(border);
  p->setBrush(fill);
  p->drawRoundedRect(rect_, radius, radius);

  // A collapsed module shows how its tensors split between the states, as a bar.
  if (aggregate && hasStates_) drawStateBar(p, rect_, counts_, pal);

  if (current_) {
    p->setPen(QPen(pal.highlight, 3));
    p->setBrush(Qt::NoBrush);
    p->drawRoundedRect(rect_.adjusted(-3.5, -3.5, 3.5, 3.5), radius + 3, radius + 3);
  }
  if (selected_) {
    p->setPen(QPen(pal.text, 1.2, Qt::DotLine));
    p->setBrush(Qt::NoBrush);
    p->drawRoundedRect(rect_.adjusted(-6, -6, 6, 6), radius + 5, radius + 5);
  }

  if (lodOf(p) < kTextLod) return;
  const double top = aggregate ? rect_.top() + 2 : rect_.top();
  const double textBottom = aggregate ? rect_.bottom() - 10 : rect_.bottom();
  const QRectF textRect(rect_.left() + 4, top, rect_.width() - (aggregate ? 20 : 8),
                        textBottom - top);
  drawTitles(p, textRect, title_, subtitle_, text);
  if (aggregate) drawPlusMinus(p, expandButtonRect(), true, pal.mutedText);
}

// ---- EdgeItem ----------------------------------------------------------------------------

EdgeItem::EdgeItem(const EdgeRoute& route, const GraphStyle* style) : style_(style) {
  setZValue(0);
  QPainterPath path;
  if (!route.points.empty()) {
    path.moveTo(route.points[0].x, route.points[0].y);
    for (std::size_t i = 1; i + 2 < route.points.size(); i += 3)
      path.cubicTo(route.points[i].x, route.points[i].y, route.points[i + 1].x,
                   route.points[i + 1].y, route.points[i + 2].x, route.points[i + 2].y);
  }
  setPath(path);
  if (route.hasArrowHead && !route.points.empty()) {
    const QPointF tip(route.arrowHead.x, route.arrowHead.y);
    const QPointF from(route.points.back().x, route.points.back().y);
    QLineF line(from, tip);
    const double len = std::max(1e-6, line.length());
    const QPointF dir = (tip - from) / len;
    const QPointF normal(-dir.y(), dir.x());
    arrow_ << tip << from + normal * 3.2 << from - normal * 3.2;
  }
}

QRectF EdgeItem::boundingRect() const {
  return QGraphicsPathItem::boundingRect().united(arrow_.boundingRect()).adjusted(-2, -2, 2, 2);
}

void EdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
  const Palette& pal = style_->palette;
  p->setRenderHint(QPainter::Antialiasing, true);
  p->setPen(QPen(pal.edge, 1.1));
  p->setBrush(Qt::NoBrush);
  p->drawPath(path());
  if (!arrow_.isEmpty()) {
    p->setPen(Qt::NoPen);
    p->setBrush(pal.edge);
    p->drawPolygon(arrow_);
  }
}

}  // namespace ckpt::ui
