#pragma once

// The model graph: modules as clusters (a click toggles checkpointing), collapsed modules as
// single nodes (double-click or "+" expands), nodes coloured by their tensors' state at the
// player's cursor, the op at the cursor highlighted, the segment being recomputed lit up.
// A pure function of (graph + layout, trace, cursor, checkpointed set, selection).

#include <QGraphicsView>
#include <QPointer>
#include <memory>
#include <set>
#include <unordered_map>

#include "engine/report/state_timeline.hpp"
#include "engine/trace/trace.hpp"
#include "ui/core/model_graph.hpp"
#include "ui/graph/graph_items.hpp"
#include "ui/layout/layout_engine.hpp"

class QLabel;

namespace ckpt::ui {

class StateLegend;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;

  void setGraph(std::shared_ptr<const ModelGraph> graph, LayoutResultPtr layout);
  void clearGraph();
  const std::shared_ptr<const ModelGraph>& graph() const { return graph_; }
  // The run's trace and its state timeline (both from the same RunSnapshot).
  void setTrace(std::shared_ptr<const Trace> trace,
                std::shared_ptr<const StateTimeline> timeline = nullptr);
  void setCursorStep(std::int64_t step);
  void setCheckpointed(const std::set<std::string>& modules);
  void setSelectedOp(std::int64_t op);
  void setGraphPalette(const Palette& palette);
  // A message over the view ("Laying out…", a Graphviz error); empty hides it.
  void setOverlayText(const QString& text, bool isError = false);
  QString overlayText() const;
  // Keep the op at the cursor in view while playing.
  void setFollowCursor(bool on) { follow_ = on; }

  // Whole graph to .png or .svg.
  bool exportImage(const QString& path, QString* error = nullptr) const;

  // For tests and the inspector.
  ClusterItem* clusterItem(const QString& module) const;
  NodeItem* nodeItem(int index) const;
  NodeItem* nodeItemForOp(std::int64_t op) const;
  int currentNode() const { return currentNode_; }
  QString recomputingModule() const { return recomputing_; }
  NodeItem::StateCounts statesOf(int node) const;

 public slots:
  void zoomIn();
  void zoomOut();
  void fitAll();

 signals:
  void moduleToggleRequested(const QString& module);
  void expandRequested(const QString& module);
  void collapseRequested(const QString& module);
  void opSelected(std::int64_t op);
  void moduleSelected(const QString& module);
  void message(const QString& text);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  void rebuildScene();
  void resolveTensors();
  void resetCounts();
  void moveCounts(std::int64_t step);
  void updateStates();
  void click(QGraphicsItem* item, const QPointF& scenePos);
  void setHovered(QGraphicsItem* item);
  QGraphicsItem* interactiveItemAt(const QPoint& viewPos) const;
  void placeOverlay();
  void applyScale(double factor);

  GraphStyle style_;
  std::shared_ptr<const ModelGraph> graph_;
  LayoutResultPtr layout_;
  std::shared_ptr<const Trace> trace_;
  std::int64_t cursor_ = -1;
  std::set<std::string> checkpointed_;
  std::int64_t selectedOp_ = -1;
  bool follow_ = false;

  std::vector<NodeItem*> nodes_;
  std::unordered_map<std::string, ClusterItem*> clusters_;
  std::shared_ptr<const StateTimeline> timeline_;
  std::vector<NodeItem::StateCounts> counts_;  // per node, at appliedStep_
  std::size_t applied_ = 0;                    // changes of timeline_ applied
  std::vector<int> dirty_;
  // Inputs and outputs are not op outputs: their few tensors are queried directly.
  std::vector<std::vector<std::int64_t>> nodeTensors_;
  int currentNode_ = -1;
  QString recomputing_;
  QGraphicsItem* recomputingItem_ = nullptr;
  QGraphicsItem* hovered_ = nullptr;

  QLabel* overlay_ = nullptr;
  StateLegend* legend_ = nullptr;
  QPoint pressPos_;
  bool pressed_ = false;
  bool panning_ = false;
  bool swallowRelease_ = false;
  QString lastToggled_;
  qint64 lastToggleMs_ = 0;
};

}  // namespace ckpt::ui
