#pragma once

// The graph view's items: module clusters, op / module / input nodes, edges. They only draw
// what the view tells them (state colours, marks); all decisions live in GraphView.

#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <array>

#include "ui/core/model_graph.hpp"
#include "ui/style/palette.hpp"

namespace ckpt::ui {

// Shared drawing context so that a theme change is one assignment.
struct GraphStyle {
  Palette palette;
};

class ClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  ClusterItem(const VisualCluster& cluster, const QRectF& rect, const GraphStyle* style,
              bool checkpointable, QString reason);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  const QString& module() const { return module_; }
  bool checkpointable() const { return checkpointable_; }
  const QString& reason() const { return reason_; }
  void setCheckpointed(bool on);
  void setRecomputing(bool on);
  void setHovered(bool on);
  // The "−" button in the title bar that collapses the cluster.
  QRectF collapseButtonRect() const;

 private:
  QRectF rect_;
  QString module_;
  QString title_;
  int depth_ = 0;
  const GraphStyle* style_;
  bool checkpointable_ = false;
  QString reason_;
  bool checkpointed_ = false;
  bool recomputing_ = false;
  bool hovered_ = false;
};

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  NodeItem(int index, const VisualNode& node, const QRectF& rect, const GraphStyle* style);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  int index() const { return index_; }
  VisualNode::Kind kind() const { return kind_; }
  const QString& module() const { return module_; }
  bool expandable() const { return opCount_ > 1; }
  QRectF expandButtonRect() const;

  // Counts of the node's tensors in each state at the cursor (an op node has one tensor).
  using StateCounts = std::array<std::int32_t, kActivationStateCount>;
  void setStates(const StateCounts& counts);
  void setCurrent(bool on);
  void setSelected(bool on);
  void setCheckpointed(bool on);
  void setCheckpointable(bool on) { checkpointable_ = on; }
  void setHovered(bool on);
  void setRecomputing(bool on);

 private:
  ActivationState dominant() const;

  QRectF rect_;
  int index_;
  VisualNode::Kind kind_;
  QString title_;
  QString subtitle_;
  QString module_;
  std::int64_t opCount_ = 0;
  const GraphStyle* style_;
  StateCounts counts_{};
  bool hasStates_ = false;
  bool current_ = false;
  bool selected_ = false;
  bool checkpointed_ = false;
  bool checkpointable_ = false;
  bool hovered_ = false;
  bool recomputing_ = false;
};

class EdgeItem : public QGraphicsPathItem {
 public:
  EdgeItem(const EdgeRoute& route, const GraphStyle* style);
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  QRectF boundingRect() const override;

 private:
  QPolygonF arrow_;
  const GraphStyle* style_;
};

}  // namespace ckpt::ui
