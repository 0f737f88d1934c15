#pragma once

// The Plan dock: the memory/recompute frontier of every strategy (computed by engine/plan off
// the UI thread, cancellable), a budget slider, hover for a point's plan, click to apply it.

#include <QFutureWatcher>
#include <QWidget>
#include <atomic>
#include <memory>

#include "engine/plan/planner.hpp"

class QCheckBox;
class QLabel;
class QPainter;
class QPushButton;
class QSlider;

namespace ckpt::ui {

// What one planning job found: every evaluated point and the frontier through them.
struct PlanResults {
  std::vector<PlanPoint> points;
  std::vector<PlanPoint> front;
  std::int64_t plain_peak = 0;
  std::string error;
};

class FrontierPlot : public QWidget {
  Q_OBJECT

 public:
  explicit FrontierPlot(QWidget* parent = nullptr);
  void setResults(std::shared_ptr<const PlanResults> r);
  void setBudget(std::int64_t bytes, int chosen);  // chosen: index into the frontier, or -1
  void setCurrentKey(const std::string& key);      // the session's config, marked
  QSize sizeHint() const override { return {420, 300}; }

 signals:
  void pointClicked(int index);  // into results->points

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;

 private:
  QPointF at(const PlanPoint& p) const;
  void drawTicks(QPainter& p, const QRectF& area) const;
  int pointAt(const QPointF& pos) const;

  std::shared_ptr<const PlanResults> results_;
  std::int64_t budget_ = 0;
  int chosen_ = -1;
  std::string current_;
};

class PlanView : public QWidget {
  Q_OBJECT

 public:
  explicit PlanView(QWidget* parent = nullptr);
  ~PlanView() override;
  void setModel(std::shared_ptr<const Model> model, const RunRequest& base);
  void setCurrentRequest(const RunRequest& request);
  void startPlanning();
  void cancel();
  bool busy() const { return watcher_.isRunning(); }
  std::shared_ptr<const PlanResults> results() const { return results_; }
  FrontierPlot* plot() const { return plot_; }
  QSlider* budgetSlider() const { return slider_; }
  QCheckBox* offloadBox() const { return offload_; }
  QString statusText() const;

 signals:
  // The plan clicked: its modules, ranges and each region's per-op policy.
  void planChosen(const ckpt::CheckpointPlan& plan);
  void planningFinished();

 private:
  void onFinished();
  void onBudget(int percent);
  void apply(const PlanPoint& p);

  std::shared_ptr<const Model> model_;
  RunRequest base_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QFutureWatcher<std::shared_ptr<const PlanResults>> watcher_;
  std::shared_ptr<const PlanResults> results_;
  FrontierPlot* plot_;
  QSlider* slider_;
  QLabel* budgetLabel_;
  QLabel* status_;
  QPushButton* run_;
  QCheckBox* offload_;  // the planner may offload modules (a cuda request only)
};

}  // namespace ckpt::ui
