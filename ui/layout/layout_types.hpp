#pragma once

// Plain structs in and out of a graph layout, so that the layout engine (Graphviz's dot, run out
// of process) stays behind a small interface and the views never see DOT or JSON.

#include <string>
#include <unordered_map>
#include <vector>

namespace ckpt::ui {

struct LayoutNode {
  std::string id;
  double width = 72;  // points (1/72 in), the size the view will draw
  double height = 36;
  std::string cluster;  // id of the innermost cluster holding it, "" for none
};

struct LayoutEdge {
  std::string tail;
  std::string head;
};

struct LayoutCluster {
  std::string id;
  std::string label;   // reserves room for the title the view draws
  std::string parent;  // enclosing cluster id, "" for the top level
};

struct LayoutGraph {
  std::vector<LayoutNode> nodes;
  std::vector<LayoutEdge> edges;
  std::vector<LayoutCluster> clusters;
  bool leftToRight = false;
};

struct LayoutPoint {
  double x = 0;
  double y = 0;
};

struct LayoutRect {
  double x = 0;  // top-left, y growing downwards (Qt's convention)
  double y = 0;
  double width = 0;
  double height = 0;
};

struct EdgeRoute {
  // Cubic Bézier control points: p0, then (c1, c2, p) triples. Empty when dot gave none.
  std::vector<LayoutPoint> points;
  bool hasArrowHead = false;
  LayoutPoint arrowHead;  // the tip, where dot ends the edge at the head node's border
};

struct LayoutResult {
  std::unordered_map<std::string, LayoutRect> nodes;
  std::unordered_map<std::string, LayoutRect> clusters;
  std::vector<EdgeRoute> edges;  // in LayoutGraph::edges order
  LayoutRect bounds;
};

}  // namespace ckpt::ui
