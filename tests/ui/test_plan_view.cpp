// The Plan dock: planning off the UI thread, the frontier drawn with the current configuration
// marked, the budget slider choosing the cheapest frontier point that fits, a click applying a
// plan to the session (as a click on a block does), cancel.
#include <QCheckBox>
#include <QSignalSpy>
#include <QSlider>
#include <QtTest>

#include "engine/model/loader.hpp"
#include "ui/panels/plan_view.hpp"
#include "ui/session/session.hpp"

using namespace ckpt;
using namespace ckpt::ui;

namespace {

std::shared_ptr<const Model> model() {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/data/plan/nested_blocks.json")
          .toStdString());
}

}  // namespace

class TestPlanView : public QObject {
  Q_OBJECT
 private slots:
  void plansOffTheUiThreadAndAClickAppliesThePlan() {
    Session session;
    auto m = model();
    session.openModel(m, "nested_blocks.json");
    PlanView view;
    view.resize(640, 420);
    view.setModel(m, session.request());
    QObject::connect(&view, &PlanView::planChosen, &session, &Session::setPlan);
    QSignalSpy done(&view, &PlanView::planningFinished);
    view.startPlanning();
    QVERIFY(view.busy());  // the UI thread is free meanwhile
    QVERIFY(done.wait(240000));
    const auto r = view.results();
    QVERIFY2(r && r->error.empty(), r ? r->error.c_str() : "no results");
    QVERIFY(r->front.size() >= 2);
    view.setCurrentRequest(session.request());
    view.budgetSlider()->setValue(95);
    const QImage shot = view.grab().toImage();
    const QString png = QDir::temp().filePath("ckptlab_plan_dock.png");
    QVERIFY(shot.save(png));
    qInfo("Plan dock screenshot: %s", qPrintable(png));
    // Some pixels carry the strategies' colours: points were drawn.
    int coloured = 0;
    for (int y = 0; y < shot.height(); y += 2)
      for (int x = 0; x < shot.width(); x += 2)
        if (shot.pixelColor(x, y) == QColor(0x1f77b4)) ++coloured;
    QVERIFY(coloured > 10);
    // A click on a frontier point applies its plan to the session.
    const PlanPoint* target = nullptr;
    for (const auto& p : r->front)
      if (!p.chosen.empty()) target = &p;
    QVERIFY(target);
    std::size_t index = 0;
    while (r->points[index].plan.key() != target->plan.key()) ++index;
    QSignalSpy changed(&session, &Session::configChanged);
    emit view.plot()->pointClicked(static_cast<int>(index));
    QCOMPARE(session.request().plan.key(), target->plan.key());
    QVERIFY(changed.count() >= 1);
  }

  // The Offload box (issue 28): offered on a cuda request only; checked, the planner weighs
  // each module's copies to host memory against its recompute, and a click on a plan that
  // offloads gives the session that plan's offloaded modules.
  void offloadBoxLetsThePlannerOffloadOnAGpu() {
    Session session;
    auto m = load_model(
        (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/gpt_mini.json").toStdString());
    session.openModel(m, "gpt_mini.json");
    PlanView view;
    view.setModel(m, session.request());
    QVERIFY(!view.offloadBox()->isEnabled());  // the cpu: host memory is the memory planned
    RunRequest gpu = session.request();
    gpu.settings.device = Device::cuda;
    gpu.settings.pcie_gb_per_s = 1e5;  // copies all but free: offload beats recompute
    view.setModel(m, gpu);
    QVERIFY(view.offloadBox()->isEnabled());
    view.offloadBox()->setChecked(true);
    QSignalSpy done(&view, &PlanView::planningFinished);
    view.startPlanning();
    QVERIFY(done.wait(240000));
    const auto r = view.results();
    QVERIFY2(r && r->error.empty(), r ? r->error.c_str() : "no results");
    const PlanPoint* offloads = nullptr;
    for (const auto& p : r->points)
      if (!p.plan.offload.empty() && p.eval.transfer_ns > 0) offloads = &p;
    QVERIFY(offloads);
    view.resize(640, 420);
    const QString png = QDir::temp().filePath("ckptlab_plan_dock_offload.png");
    QVERIFY(view.grab().toImage().save(png));
    qInfo("Plan dock with offload weighed: %s", qPrintable(png));
    session.setRequest(gpu);
    QObject::connect(&view, &PlanView::planChosen, &session, &Session::setPlan);
    std::size_t index = 0;
    while (&r->points[index] != offloads) ++index;
    emit view.plot()->pointClicked(static_cast<int>(index));
    QCOMPARE(session.request().plan.offload, offloads->plan.offload);
  }

  void cancelStopsPlanning() {
    PlanView view;
    view.setModel(model(), RunRequest{});
    QSignalSpy done(&view, &PlanView::planningFinished);
    view.startPlanning();
    view.cancel();
    QVERIFY(done.wait(240000));
    QVERIFY(view.results());
  }
};

QTEST_MAIN(TestPlanView)
#include "test_plan_view.moc"
