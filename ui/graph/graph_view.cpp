// GraphView: the scene built from the graph and its layout (clusters, nodes, edges, each with
// its tooltip), the message overlay beside the state legend, and export to an image. The
// colouring by state is in graph_view_states.cpp, the mouse and zoom in graph_view_input.cpp.

#include "ui/graph/graph_view.hpp"

#include <QFileInfo>
#include <QGraphicsScene>
#include <QLabel>
#include <QPainter>
#include <QScrollBar>
#include <QSvgGenerator>
#include <algorithm>

#include "ui/graph/state_legend.hpp"

namespace ckpt::ui {

namespace {

QString html(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

QString clusterToolTip(const VisualCluster& c, const Module* m, bool ok, const QString& reason) {
  QString tip = QStringLiteral("<b>%1</b>").arg(html(c.module));
  if (m) tip += QStringLiteral(" · %1").arg(html(m->kind));
  tip += ok ? GraphView::tr("<br>Click to checkpoint it (or stop). Double-click or − to collapse.")
            : GraphView::tr("<br>Cannot be checkpointed: %1").arg(reason.toHtmlEscaped());
  return tip;
}

// `m` is the module a module node shows (null when the model has none of that path).
QString nodeToolTip(const VisualNode& n, const Model& model, const Module* m) {
  QString tip;
  if (n.kind == VisualNode::Kind::module) {
    tip = QStringLiteral("<b>%1</b> · %2<br>%3 ops")
              .arg(html(n.module), m ? html(m->kind) : QString())
              .arg(n.opCount);
    if (m && !m->checkpointable)
      tip += GraphView::tr("<br>Cannot be checkpointed: %1")
                 .arg(QString::fromStdString(m->not_checkpointable_reason).toHtmlEscaped());
    else
      tip += GraphView::tr("<br>Click to checkpoint it (or stop).");
    if (n.opCount > 1) tip += GraphView::tr(" Double-click or + to expand.");
  } else if (n.kind == VisualNode::Kind::op) {
    const OpNode& op = model.ops[static_cast<std::size_t>(n.op)];
    tip = QStringLiteral("<b>%1</b> · %2").arg(html(op.name), html(op.op_type));
    if (!op.module.empty()) tip += GraphView::tr("<br>in %1").arg(html(op.module));
    tip += GraphView::tr("<br>Click to inspect it.");
  } else {
    tip = QStringLiteral("<b>%1</b> · %2").arg(html(n.title), html(n.subtitle));
  }
  return tip;
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
    item->setToolTip(clusterToolTip(c, m, ok, reason));
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
    const Module* m = n.kind == VisualNode::Kind::module ? moduleAt(n.module) : nullptr;
    if (n.kind == VisualNode::Kind::module) item->setCheckpointable(m && m->checkpointable);
    item->setToolTip(nodeToolTip(n, model, m));
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
