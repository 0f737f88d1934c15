#pragma once

// The open document: a Model, its checkpoint configuration, the expansion of its graph, the
// latest run and the previous configuration's curve (the ghost). The views observe it; every
// change of configuration re-runs through the RunController, every expansion change re-lays
// out through the LayoutEngine. Loading also happens off the UI thread.

#include <QFutureWatcher>
#include <QObject>
#include <memory>
#include <set>

#include "engine/model/loader.hpp"
#include "ui/core/model_graph.hpp"
#include "ui/layout/layout_engine.hpp"
#include "ui/session/pins.hpp"
#include "ui/session/run_controller.hpp"

namespace ckpt::ui {

class Session : public QObject {
  Q_OBJECT

 public:
  explicit Session(QObject* parent = nullptr);
  ~Session() override;

  // Opens a .json or .onnx file, or an embedded sample (":/samples/..."), off the UI thread;
  // answers with modelChanged() or openFailed(). Another file starts with nothing frozen.
  void openFile(const QString& path);
  // Parameters taken as not trainable (--frozen's patterns: a parameter's name or a module
  // path), beyond what the file says. Toggling one opens the file again with the new list
  // (what an op keeps is decided when it runs, from its inputs' requires_grad), keeping the
  // configuration; false (saying why through message()) while a load is under way or for a
  // model that is not a file.
  bool toggleFrozen(const QString& pattern);
  // The whole list at once (Run ▸ Freeze Parameters…); a list that names no parameter is not
  // taken (message() says why) and the model stays as it was.
  bool setFrozen(const std::vector<std::string>& patterns);
  const std::vector<std::string>& frozen() const { return loadOptions_.frozen; }
  // Adopts an already loaded model (tests, benchmarks).
  void openModel(std::shared_ptr<const Model> model, const QString& source);
  bool loading() const { return loading_; }

  std::shared_ptr<const Model> model() const { return model_; }
  QString source() const { return source_; }
  QString displayName() const;

  const RunRequest& request() const { return request_; }
  bool isCheckpointed(const std::string& module) const {
    return request_.plan.modules.count(module) > 0;
  }
  // Returns false (and says why through message()) when the module cannot be checkpointed.
  bool toggleModule(const QString& module);
  void setModules(const std::set<std::string>& modules);
  // Several settings at once, in one run (a lesson step states them together).
  void setRequest(const RunRequest& request);
  // A plan from the Plan dock: its modules, ranges of siblings and the policy of each region
  // (the Policy box's, or recomputed whole), as one change; what it offloads stays unless the
  // plan offloads modules itself (the planner weighed offload).
  void setPlan(const CheckpointPlan& plan);
  void setReentrant(bool reentrant);
  void setPreserveRng(bool preserve);
  void setPolicy(const SelectivePolicy& policy);
  void setPrecision(AmpMode amp);     // --amp: autocast of the forward and the loss
  void setBatch(std::int64_t batch);  // 0: the scenario's
  // Whose memory: this engine's CPU run, or PyTorch 2.x's on a CUDA GPU (whose real run the
  // engine's memory guard does not start: the CUDA engine runs no whole model yet).
  void setDevice(Device device);
  // Offloads `module`'s saved tensors to host memory, or stops doing so; false (saying why
  // through message()) on the CPU, where the copies would stay in the same memory, and for a
  // checkpointed module, which keeps nothing to offload.
  bool toggleOffload(const QString& module);
  // The optimizer the training step ends with (none: the run stops after backward).
  void setOptimizer(OptimizerKind kind);
  // FSDP2 (--fsdp, --reshard-after-forward, --reduce-dtype): ranks 0 is one unsharded GPU;
  // otherwise the run's report, plot and plans are one rank's (engine/report/fsdp_memory.hpp).
  void setFsdp(const FsdpSettings& fsdp);
  // --param-dtype: what FSDP2's MixedPrecisionPolicy computes with (float32 or bfloat16).
  void setParamDtype(DType dtype);
  std::int64_t effectiveBatch() const;
  void rerun();
  // Undo and redo of configuration changes (toggles, variant, RNG, policy, batch, plans,
  // lesson steps), each change one step; opening another model starts a new history.
  bool canUndo() const { return !undo_.empty(); }
  bool canRedo() const { return !redo_.empty(); }
  void undo();
  void redo();

  std::shared_ptr<const ModelGraph> graph() const { return graph_; }
  LayoutResultPtr layout() const { return layout_; }
  const std::set<std::string>& expanded() const { return expanded_; }
  void expand(const QString& module);
  void collapse(const QString& module);
  bool layingOut() const { return building_ || layouts_->busy(); }

  RunSnapshotPtr current() const { return current_; }
  MemorySeriesPtr ghost() const { return ghost_; }
  QString ghostLabel() const { return ghostLabel_; }
  RunController* runs() const { return runs_; }
  // Pinned comparisons: kept across configuration changes, cleared when another model opens.
  PinList* pins() const { return pins_; }
  // Pins are saved per model file (QSettings "pins/…") and restored, run again, when it is
  // opened; off for a render-only window (--screenshot) and by default, so that a Session in
  // a test leaves the settings alone.
  void setPinsPersistent(bool on) { pinsPersistent_ = on; }
  // Saved pins of the open model still being run again.
  bool restoringPins() const { return restoring_ > 0; }
  // Pins the current run; returns its pin's id, or 0 (saying why through message()) when
  // there is nothing complete to pin. A configuration pinned already answers with its pin.
  quint64 pinCurrent();
  LayoutEngine* layouts() const { return layouts_; }

 signals:
  void modelChanged();
  void openFailed(const QString& message);
  void configChanged();
  void runBusyChanged(bool busy);
  void runFinished(ckpt::ui::RunSnapshotPtr snapshot);
  // A request's dry run, shown at once while its real run follows (then runFinished).
  void runPreviewed(ckpt::ui::RunSnapshotPtr snapshot);
  void graphChanged();
  void layoutBusyChanged(bool busy);
  void layoutFailed(const QString& message);
  // Every saved pin of the model just opened has been run again and added.
  void pinsRestored();
  void message(const QString& text);
  void historyChanged();

 private:
  void adopt(std::shared_ptr<const Model> model, const QString& source);
  void load(const QString& path, bool keepRequest);
  void configure();
  // Runs and shows request_ without recording it in the history (undo, redo).
  void reconfigure();
  void relayout();
  void onRunFinished(RunSnapshotPtr snapshot);
  // Makes `snapshot` the current run (the ghost logic); false when it is not for this model.
  bool adoptRun(RunSnapshotPtr snapshot);

  std::shared_ptr<const Model> model_;
  QString source_;
  RunRequest request_;
  // What request_ was when it was last run: the state an undo returns to.
  RunRequest configured_;
  std::vector<RunRequest> undo_;
  std::vector<RunRequest> redo_;
  std::set<std::string> expanded_;
  std::shared_ptr<const ModelGraph> graph_;
  std::shared_ptr<const ModelGraph> pendingGraph_;
  quint64 pendingLayout_ = 0;
  LayoutResultPtr layout_;
  RunSnapshotPtr current_;
  MemorySeriesPtr ghost_;
  QString ghostLabel_;
  bool loading_ = false;
  LoadOptions loadOptions_;
  LoadOptions previousOptions_;  // what a failed reload with other options returns to
  quint64 openGeneration_ = 0;
  quint64 buildGeneration_ = 0;
  bool building_ = false;

  RunController* runs_;
  LayoutEngine* layouts_;
  PinList* pins_;
  bool pinsPersistent_ = false;
  QString pinsSource_;  // the model file whose pins the list holds ("" while it changes)
  int restoring_ = 0;
  void savePins();
  void restorePins();
};

}  // namespace ckpt::ui
