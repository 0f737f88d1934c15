#include "ui/panels/plan_view.hpp"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSlider>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/report/run_summary.hpp"

namespace ckpt::ui {

namespace {

QColor strategyColour(Strategy s) {
  switch (s) {
    case Strategy::none:
      return QColor(0x7f7f7f);
    case Strategy::all:
      return QColor(0xd62728);
    case Strategy::every_k:
      return QColor(0xff7f0e);
    case Strategy::sqrt:
      return QColor(0x8c564b);
    case Strategy::uniform:
      return QColor(0xe377c2);
    case Strategy::greedy:
      return QColor(0x2ca02c);
    case Strategy::knapsack:
      return QColor(0x9467bd);
    case Strategy::optimal:
      return QColor(0x1f77b4);
  }
  return Qt::black;
}

constexpr double kLeft = 80, kRight = 96, kTop = 12, kBottom = 34;

QString tip(const PlanPoint& p) {
  const QString copies = p.eval.transfer_ns > 0
                             ? QStringLiteral("<br>copies to host and back %1 ms")
                                   .arg(static_cast<double>(p.eval.transfer_ns) / 1e6, 0, 'f', 2)
                             : QString();
  return QStringLiteral("<b>%1</b> %2<br>peak %3<br>recompute %4 ms, %5 op executions%6<br>%7")
      .arg(strategy_name(p.strategy), QString::fromStdString(p.detail),
           QString::fromStdString(format_bytes(p.eval.peak_bytes)))
      .arg(p.eval.recompute_ms(), 0, 'f', 2)
      .arg(p.eval.recompute_ops)
      .arg(copies, QString::fromStdString(plan_text(p)).toHtmlEscaped());
}

}  // namespace

FrontierPlot::FrontierPlot(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(260, 180);
}

void FrontierPlot::setResults(std::shared_ptr<const PlanResults> r) {
  results_ = std::move(r);
  update();
}

void FrontierPlot::setBudget(std::int64_t bytes, int chosen) {
  budget_ = bytes;
  chosen_ = chosen;
  update();
}

void FrontierPlot::setCurrentKey(const std::string& key) {
  current_ = key;
  update();
}

QPointF FrontierPlot::at(const PlanPoint& p) const {
  double xmax = 1e-9, ymin = 1e300, ymax = 0;
  for (const auto& q : results_->points) {
    if (!q.eval.ok) continue;
    xmax = std::max(xmax, q.eval.cost_ms());
    ymin = std::min(ymin, static_cast<double>(q.eval.peak_bytes));
    ymax = std::max(ymax, static_cast<double>(q.eval.peak_bytes));
  }
  const double pad = std::max(1.0, (ymax - ymin) * 0.08);
  ymin -= pad;
  ymax += pad;
  const double w = width() - kLeft - kRight, h = height() - kTop - kBottom;
  return {kLeft + p.eval.cost_ms() / (xmax * 1.05) * w,
          kTop + (ymax - static_cast<double>(p.eval.peak_bytes)) / (ymax - ymin) * h};
}

int FrontierPlot::pointAt(const QPointF& pos) const {
  if (!results_) return -1;
  int best = -1;
  double dist = 8 * 8;
  for (std::size_t i = 0; i < results_->points.size(); ++i) {
    if (!results_->points[i].eval.ok) continue;
    const QPointF d = at(results_->points[i]) - pos;
    const double d2 = d.x() * d.x() + d.y() * d.y();
    if (d2 <= dist) {
      dist = d2;
      best = static_cast<int>(i);
    }
  }
  return best;
}

void FrontierPlot::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  p.setPen(palette().text().color());
  const QRectF area(kLeft, kTop, width() - kLeft - kRight, height() - kTop - kBottom);
  p.drawLine(area.bottomLeft(), area.bottomRight());
  p.drawLine(area.bottomLeft(), area.topLeft());
  p.drawText(QRectF(kLeft, height() - 20, area.width(), 20), Qt::AlignCenter,
             tr("recompute + copies (ms) →"));
  p.save();
  p.translate(14, area.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-60, -10, 120, 20), Qt::AlignCenter, tr("peak memory →"));
  p.restore();
  if (!results_ || results_->points.empty()) {
    // Wrapped inside the axes: a narrow dock clipped the one-line hint at both ends.
    p.drawText(area.adjusted(6, 6, -6, -6), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Press Plan to compute the frontier"));
    return;
  }
  drawTicks(p, area);
  QPainterPath front;
  for (std::size_t i = 0; i < results_->front.size(); ++i) {
    const QPointF q = at(results_->front[i]);
    i == 0 ? front.moveTo(q) : front.lineTo(q);
  }
  p.setPen(QPen(strategyColour(Strategy::optimal), 1.5));
  p.drawPath(front);
  if (budget_ > 0) {
    PlanPoint b;
    b.eval.peak_bytes = budget_;
    const double y = at(b).y();
    p.setPen(QPen(QColor(0xd62728), 1, Qt::DashLine));
    p.drawLine(QPointF(kLeft, y), QPointF(area.right(), y));
    p.drawText(QPointF(area.right() - 50, y - 4), tr("budget"));
  }
  for (const auto& q : results_->points) {
    if (!q.eval.ok) continue;
    p.setPen(Qt::NoPen);
    p.setBrush(strategyColour(q.strategy));
    p.drawEllipse(at(q), 5, 5);
    if (q.plan.key() == current_) {  // the configuration the session runs now
      p.setBrush(Qt::NoBrush);
      p.setPen(QPen(palette().text().color(), 2));
      p.drawRect(QRectF(at(q) - QPointF(8, 8), QSizeF(16, 16)));
    }
  }
  if (chosen_ >= 0 && chosen_ < static_cast<int>(results_->front.size())) {
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(QColor(0xd62728), 2));
    p.drawEllipse(at(results_->front[static_cast<std::size_t>(chosen_)]), 10, 10);
  }
  double y = kTop + 6;
  for (Strategy s : kStrategies) {
    p.setPen(Qt::NoPen);
    p.setBrush(strategyColour(s));
    p.drawEllipse(QPointF(width() - kRight + 14, y), 4, 4);
    p.setPen(palette().text().color());
    p.drawText(QPointF(width() - kRight + 22, y + 4), strategy_name(s));
    y += 16;
  }
}

void FrontierPlot::drawTicks(QPainter& p, const QRectF& area) const {
  // Tick labels at the extreme points: the figures come from the points themselves.
  const PlanPoint* lo = nullptr;
  const PlanPoint* hi = nullptr;
  const PlanPoint* slow = nullptr;
  for (const auto& q : results_->points) {
    if (!q.eval.ok) continue;
    if (!lo || q.eval.peak_bytes < lo->eval.peak_bytes) lo = &q;
    if (!hi || q.eval.peak_bytes > hi->eval.peak_bytes) hi = &q;
    if (!slow || q.eval.cost_ns() > slow->eval.cost_ns()) slow = &q;
  }
  if (!lo) return;
  p.setPen(palette().text().color());
  for (const PlanPoint* q : {lo, hi}) {
    const double y = at(*q).y();
    p.drawLine(QPointF(kLeft - 4, y), QPointF(kLeft, y));
    p.drawText(
        QRectF(0, y - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
        QString::number(static_cast<double>(q->eval.peak_bytes) / (1 << 20), 'f', 2) + " MiB");
  }
  const double x = at(*slow).x();
  p.drawLine(QPointF(x, area.bottom()), QPointF(x, area.bottom() + 4));
  p.drawText(QRectF(x - 40, area.bottom() + 4, 80, 14), Qt::AlignCenter,
             QString::number(slow->eval.cost_ms(), 'f', 2));
  p.drawText(QRectF(kLeft - 20, area.bottom() + 4, 40, 14), Qt::AlignCenter, "0");
}

void FrontierPlot::mouseMoveEvent(QMouseEvent* e) {
  const int i = pointAt(e->position());
  if (i < 0) {
    QToolTip::hideText();
    return;
  }
  QToolTip::showText(e->globalPosition().toPoint(),
                     tip(results_->points[static_cast<std::size_t>(i)]), this);
}

void FrontierPlot::mousePressEvent(QMouseEvent* e) {
  const int i = pointAt(e->position());
  if (i >= 0) emit pointClicked(i);
}

PlanView::PlanView(QWidget* parent)
    : QWidget(parent),
      plot_(new FrontierPlot),
      slider_(new QSlider(Qt::Horizontal)),
      budgetLabel_(new QLabel),
      status_(new QLabel),
      run_(new QPushButton(tr("Plan"))),
      offload_(new QCheckBox(tr("Offload"))) {
  offload_->setToolTip(
      tr("On a GPU (Device: cuda): each module may also keep its saved tensors in host memory "
         "(save_on_cpu), weighed against recomputing it. Copies at the --pcie bandwidth, "
         "recompute at a reference GPU's rates: both estimates."));
  offload_->setEnabled(false);
  slider_->setRange(5, 100);
  slider_->setValue(70);
  slider_->setToolTip(tr("Memory budget, as a share of the peak without checkpointing"));
  status_->setWordWrap(true);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Budget")));
  row->addWidget(slider_, 1);
  row->addWidget(budgetLabel_);
  row->addWidget(offload_);
  row->addWidget(run_);
  auto* col = new QVBoxLayout(this);
  col->addLayout(row);
  col->addWidget(plot_, 1);
  col->addWidget(status_);
  connect(slider_, &QSlider::valueChanged, this, &PlanView::onBudget);
  connect(run_, &QPushButton::clicked, this, [this] { busy() ? cancel() : startPlanning(); });
  connect(&watcher_, &QFutureWatcherBase::finished, this, &PlanView::onFinished);
  connect(plot_, &FrontierPlot::pointClicked, this, [this](int i) {
    if (results_) apply(results_->points[static_cast<std::size_t>(i)]);
  });
  onBudget(slider_->value());
}

PlanView::~PlanView() {
  cancel();
  watcher_.waitForFinished();
}

void PlanView::setModel(std::shared_ptr<const Model> model, const RunRequest& base) {
  cancel();
  model_ = std::move(model);
  base_ = base;
  offload_->setEnabled(base_.settings.device == Device::cuda);
  results_.reset();
  plot_->setResults(nullptr);
  status_->setText(tr("Plan: every strategy's plan and a budget sweep, each judged by a run."));
}

QString PlanView::statusText() const {
  return status_->text();
}

void PlanView::setCurrentRequest(const RunRequest& request) {
  plot_->setCurrentKey(request.plan.key());
  if (request.settings == base_.settings) return;
  // The next plans are made with the settings shown (device, ranks, ...): sharded (FSDP2),
  // the evaluator judges every plan by one rank's peak.
  base_.settings = request.settings;
  offload_->setEnabled(base_.settings.device == Device::cuda);
  if (busy()) return;
  const int ranks = base_.settings.fsdp.ranks;
  status_->setText(
      (results_ ? tr("The settings changed: press Plan to plan with them. ") : QString()) +
      (ranks > 0 || base_.settings.param_dtype != DType::f32
           ? tr("Plans are judged per rank of %1 (FSDP2; %2).")
                 .arg(std::max(1, ranks))
                 .arg(QLatin1String(kFsdpNotMeasured))
           : tr("Plan: every strategy's plan and a budget sweep, each judged by a run.")));
}

void PlanView::startPlanning() {
  if (!model_ || busy()) return;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  run_->setText(tr("Cancel"));
  status_->setText(tr("Planning (each point is a run of the engine)…"));
  const auto percent = slider_->value();
  CandidateOptions options;
  options.offload = offload_->isEnabled() && offload_->isChecked();
  watcher_.setFuture(QtConcurrent::run([model = model_, base = base_, cancel = cancel_, percent,
                                        options]() -> std::shared_ptr<const PlanResults> {
    auto r = std::make_shared<PlanResults>();
    try {
      PlanEvaluator ev(model, base.settings, base.plan.policy, cancel.get(), false,
                       options.offload);
      Planner planner(ev, options, StrategyParams{}, cancel.get());
      r->plain_peak = ev.baseline().peak_bytes;
      r->points = planner.sweep(r->plain_peak * percent / 100);
      r->front = pareto_frontier(r->points);
      if (cancel->load()) r->error = "cancelled";
    } catch (const std::exception& e) {
      r->error = e.what();
    }
    return r;
  }));
}

void PlanView::cancel() {
  if (cancel_) cancel_->store(true);
}

void PlanView::onFinished() {
  run_->setText(tr("Plan"));
  results_ = watcher_.result();
  plot_->setResults(results_);
  if (!results_->error.empty()) {
    status_->setText(tr("Planning stopped: %1").arg(QString::fromStdString(results_->error)));
  } else {
    status_->setText(tr("%1 plans evaluated, %2 on the frontier. Hover a point for its plan, "
                        "click it to apply it.")
                         .arg(results_->points.size())
                         .arg(results_->front.size()));
  }
  onBudget(slider_->value());
  emit planningFinished();
}

void PlanView::onBudget(int percent) {
  budgetLabel_->setText(QStringLiteral("%1 %").arg(percent));
  if (!results_ || results_->plain_peak == 0) return;
  const std::int64_t bytes = results_->plain_peak * percent / 100;
  const int chosen = cheapest_within(results_->front, bytes);
  plot_->setBudget(bytes, chosen);
  budgetLabel_->setText(
      QStringLiteral("%1 % (%2)").arg(percent).arg(QString::fromStdString(format_bytes(bytes))));
}

void PlanView::apply(const PlanPoint& p) {
  emit planChosen(p.plan);
}

}  // namespace ckpt::ui
