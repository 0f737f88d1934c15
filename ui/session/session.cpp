#include "ui/session/session.hpp"

#include <algorithm>

#include <QCryptographicHash>

#include <QSettings>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtConcurrent/QtConcurrentRun>

#include "ui/util/work_pool.hpp"

#include "engine/model/loader.hpp"
#include "engine/report/config_text.hpp"

namespace ckpt::ui {

namespace {

struct Loaded {
  std::shared_ptr<const Model> model;
  QString error;
};

// Embedded samples are read from the resources; an embedded ONNX file goes through a
// temporary copy because the ONNX loader reads files.
Loaded loadOnWorker(QString path, LoadOptions options) {
  Loaded out;
  try {
    if (path.startsWith(QLatin1String(":/"))) {
      QFile f(path);
      if (!f.open(QIODevice::ReadOnly))
        throw std::runtime_error(path.toStdString() + ": not found");
      const QByteArray bytes = f.readAll();
      if (path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive)) {
        QTemporaryDir dir;
        const QString copy = dir.filePath(QFileInfo(path).fileName());
        QFile t(copy);
        if (!t.open(QIODevice::WriteOnly) || t.write(bytes) != bytes.size())
          throw std::runtime_error(path.toStdString() + ": cannot copy to a temporary file");
        t.close();
        auto m = load_model(copy.toStdString(), options);
        m->source = path.toStdString();
        out.model = std::move(m);
      } else {
        out.model = load_model_json_text(bytes.toStdString(), path.toStdString(), options);
      }
    } else {
      out.model = load_model(path.toStdString(), options);
    }
  } catch (const std::exception& e) {
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

std::string parentPath(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

}  // namespace

Session::Session(QObject* parent)
    : QObject(parent),
      runs_(new RunController(this)),
      layouts_(new LayoutEngine(this)),
      pins_(new PinList(this)) {
  connect(pins_, &PinList::changed, this, &Session::savePins);
  const QString cache = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
  if (!cache.isEmpty())
    layouts_->setCacheDirectory(QDir(cache).filePath(QStringLiteral("layouts")));
  connect(runs_, &RunController::busyChanged, this, &Session::runBusyChanged);
  connect(runs_, &RunController::finished, this, &Session::onRunFinished);
  connect(runs_, &RunController::previewed, this, [this](RunSnapshotPtr snapshot) {
    if (adoptRun(std::move(snapshot))) emit runPreviewed(current_);
  });
  connect(layouts_, &LayoutEngine::busyChanged, this, &Session::layoutBusyChanged);
  connect(layouts_, &LayoutEngine::finished, this, [this](quint64 id, LayoutResultPtr result) {
    if (id != pendingLayout_ || !pendingGraph_) return;
    graph_ = pendingGraph_;
    pendingGraph_.reset();
    layout_ = std::move(result);
    emit graphChanged();
  });
  connect(layouts_, &LayoutEngine::failed, this, [this](quint64 id, const QString& message) {
    if (id != pendingLayout_) return;
    // The expansion that could not be laid out is forgotten, the previous picture stays.
    if (graph_) expanded_ = graph_->expanded();
    pendingGraph_.reset();
    emit layoutFailed(message);
  });
}

Session::~Session() {
  runs_->cancelAll();
}

QString Session::displayName() const {
  if (!model_) return {};
  if (!model_->scenario.title.empty()) return QString::fromStdString(model_->scenario.title);
  if (!model_->name.empty()) return QString::fromStdString(model_->name);
  return QFileInfo(source_).fileName();
}

void Session::openFile(const QString& path) {
  loadOptions_ = {};
  load(path, false);
}

void Session::load(const QString& path, bool keepRequest) {
  const quint64 generation = ++openGeneration_;
  loading_ = true;
  auto* watcher = new QFutureWatcher<Loaded>(this);
  connect(
      watcher, &QFutureWatcher<Loaded>::finished, this,
      [this, watcher, generation, path, keepRequest, kept = request_, previous = previousOptions_] {
        watcher->deleteLater();
        if (generation != openGeneration_) return;  // a newer open superseded this one
        loading_ = false;
        Loaded loaded = watcher->result();
        if (!loaded.model) {
          // The same file again with other options (a pattern that names nothing): the
          // model open stays, with the options it was opened with.
          if (keepRequest && model_) {
            loadOptions_ = previous;
            emit message(tr("Not frozen: %1").arg(loaded.error));
            return;
          }
          emit openFailed(loaded.error);
          return;
        }
        adopt(std::move(loaded.model), path);
        if (keepRequest) {
          request_ = configured_ = kept;
          reconfigure();
        }
      });
  watcher->setFuture(QtConcurrent::run(workPool(), loadOnWorker, path, loadOptions_));
}

bool Session::toggleFrozen(const QString& pattern) {
  std::vector<std::string> frozen = loadOptions_.frozen;
  const std::string p = pattern.toStdString();
  const auto it = std::find(frozen.begin(), frozen.end(), p);
  if (it != frozen.end())
    frozen.erase(it);
  else
    frozen.push_back(p);
  return setFrozen(frozen);
}

bool Session::setFrozen(const std::vector<std::string>& patterns) {
  if (!model_ || loading_ || source_.isEmpty()) {
    emit message(tr("Freezing parameters opens the model's file again: %1")
                     .arg(loading_ ? tr("wait for the model to load") : tr("no file is open")));
    return false;
  }
  previousOptions_ = loadOptions_;
  loadOptions_.frozen = patterns;
  load(source_, true);
  return true;
}

void Session::openModel(std::shared_ptr<const Model> model, const QString& source) {
  ++openGeneration_;
  loading_ = false;
  adopt(std::move(model), source);
}

void Session::adopt(std::shared_ptr<const Model> model, const QString& source) {
  model_ = std::move(model);
  source_ = source;
  current_.reset();
  ghost_.reset();
  ghostLabel_.clear();
  pinsSource_.clear();  // the old model's pins stay saved: clearing the list is no edit
  pins_->clear();
  graph_.reset();
  layout_.reset();
  request_ = scenario_request(*model_);
  configured_ = request_;
  undo_.clear();
  redo_.clear();
  emit historyChanged();
  expanded_ = ModelGraph::initialExpansion(*model_);
  runs_->setModel(model_);
  // The first run starts before the views take in the new model (HeavyModel's module tree
  // takes tens of milliseconds), so that both proceed at once.
  runs_->request(request_);
  pinsSource_ = source;
  restorePins();
  emit modelChanged();
  emit configChanged();
  relayout();
}

namespace {
QString pinsKey(const QString& source) {
  const QString path =
      source.startsWith(QLatin1Char(':')) ? source : QFileInfo(source).absoluteFilePath();
  return QStringLiteral("pins/") +
         QString::fromLatin1(
             QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha1).toHex());
}
}  // namespace

void Session::savePins() {
  if (!pinsPersistent_ || restoring_ > 0 || pinsSource_.isEmpty()) return;
  QSettings settings;
  if (pins_->pins().empty())
    settings.remove(pinsKey(pinsSource_));
  else
    settings.setValue(pinsKey(pinsSource_), savedPinsJson(pins_->pins()));
}

// Each saved pin is run again beside the current run; it joins the list when its run is done.
void Session::restorePins() {
  if (!pinsPersistent_ || !model_) return;
  const QByteArray json = QSettings().value(pinsKey(pinsSource_)).toByteArray();
  for (SavedPin& saved : savedPinsFromJson(json, scenario_request(*model_))) {
    ++restoring_;
    runs_->computeDetached(saved.request, [this, model = model_, saved](RunSnapshotPtr snap) {
      --restoring_;
      if (model == model_ && snap && snap->series && !pins_->findRequest(snap->request)) {
        const quint64 id = pins_->add(*snap, saved.name.isEmpty() ? runName(*snap) : saved.name);
        pins_->setVisible(id, saved.visible);
      }
      if (restoring_ == 0) emit pinsRestored();
    });
  }
}

std::int64_t Session::effectiveBatch() const {
  if (request_.settings.batch > 0) return request_.settings.batch;
  return model_ ? model_->scenario.batch : 0;
}

// The run is requested before the views update for the new configuration: it starts on its
// worker while they do, which is that much sooner to the updated plot.
void Session::configure() {
  if (!same_run(request_, configured_)) {
    undo_.push_back(configured_);
    redo_.clear();
    configured_ = request_;
    emit historyChanged();
  }
  reconfigure();
}

void Session::reconfigure() {
  if (model_) runs_->request(request_);
  emit configChanged();
}

void Session::rerun() {
  configure();
}

void Session::undo() {
  if (undo_.empty()) return;
  redo_.push_back(request_);
  request_ = configured_ = undo_.back();
  undo_.pop_back();
  emit historyChanged();
  reconfigure();
}

void Session::redo() {
  if (redo_.empty()) return;
  undo_.push_back(request_);
  request_ = configured_ = redo_.back();
  redo_.pop_back();
  emit historyChanged();
  reconfigure();
}

bool Session::toggleModule(const QString& module) {
  if (!model_) return false;
  const std::string path = module.toStdString();
  const Module* m = findModule(model_->root, path);
  if (!m || path.empty()) {
    emit message(tr("No module named '%1'").arg(module));
    return false;
  }
  if (!request_.plan.modules.count(path) && !m->checkpointable) {
    emit message(tr("%1 cannot be checkpointed: %2")
                     .arg(module, QString::fromStdString(m->not_checkpointable_reason)));
    return false;
  }
  if (!request_.plan.modules.erase(path)) request_.plan.modules.insert(path);
  configure();
  return true;
}

bool Session::toggleOffload(const QString& module) {
  if (!model_) return false;
  const std::string path = module.toStdString();
  if (request_.plan.offload.erase(path)) {
    configure();
    return true;
  }
  const Module* m = findModule(model_->root, path);
  if (!m || path.empty()) {
    emit message(tr("No module named '%1'").arg(module));
    return false;
  }
  if (request_.settings.device == Device::cpu) {
    emit message(
        tr("Offloading is for a GPU: on the CPU, save_on_cpu's copies would stay in the "
           "same memory. Choose the CUDA device first."));
    return false;
  }
  if (request_.plan.modules.count(path)) {
    emit message(tr("%1 is checkpointed: it keeps nothing to offload").arg(module));
    return false;
  }
  if (!m->checkpointable) {
    emit message(tr("%1 cannot be offloaded: %2")
                     .arg(module, QString::fromStdString(m->not_checkpointable_reason)));
    return false;
  }
  request_.plan.offload.insert(path);
  configure();
  return true;
}

void Session::setModules(const std::set<std::string>& modules) {
  if (modules == request_.plan.modules) return;
  request_.plan.modules = modules;
  configure();
}

void Session::setPlan(const CheckpointPlan& plan) {
  CheckpointPlan next = plan;
  // A plan that offloads is the planner's whole answer; one that does not leaves the user's,
  // but for modules it checkpoints, inside or around (a checkpoint keeps nothing to offload).
  if (next.offload.empty()) {
    auto within = [](const std::string& inner, const std::string& outer) {
      return inner == outer || inner.rfind(outer + ".", 0) == 0;
    };
    for (const auto& m : request_.plan.offload) {
      const bool checkpointed =
          std::any_of(plan.modules.begin(), plan.modules.end(),
                      [&](const std::string& c) { return within(m, c) || within(c, m); });
      if (!checkpointed) next.offload.insert(m);
    }
  }
  if (next == request_.plan) return;
  request_.plan = std::move(next);
  configure();
}

void Session::setRequest(const RunRequest& request) {
  if (same_run(request, request_)) return;
  request_ = request;
  configure();
}

void Session::setReentrant(bool reentrant) {
  if (request_.settings.use_reentrant == reentrant) return;
  request_.settings.use_reentrant = reentrant;
  configure();
}

void Session::setPreserveRng(bool preserve) {
  if (request_.settings.preserve_rng_state == preserve) return;
  request_.settings.preserve_rng_state = preserve;
  configure();
}

void Session::setPolicy(const SelectivePolicy& policy) {
  if (request_.plan.policy == policy) return;
  request_.plan.policy = policy;
  configure();
}

void Session::setPrecision(AmpMode amp) {
  if (request_.settings.amp == amp) return;
  request_.settings.amp = amp;
  configure();
}

void Session::setDevice(Device device) {
  if (request_.settings.device == device) return;
  request_.settings.device = device;
  configure();
}

void Session::setOptimizer(OptimizerKind kind) {
  if (request_.settings.optimizer.kind == kind) return;
  request_.settings.optimizer.kind = kind;
  configure();
}

void Session::setFsdp(const FsdpSettings& fsdp) {
  if (request_.settings.fsdp == fsdp) return;
  request_.settings.fsdp = fsdp;
  configure();
}

void Session::setParamDtype(DType dtype) {
  if (request_.settings.param_dtype == dtype) return;
  request_.settings.param_dtype = dtype;
  configure();
}

void Session::setBatch(std::int64_t batch) {
  if (model_ && batch == model_->scenario.batch) batch = 0;
  if (request_.settings.batch == batch) return;
  request_.settings.batch = batch;
  configure();
}

void Session::expand(const QString& module) {
  if (!model_) return;
  // Expanding a module inside a collapsed one opens the whole path to it.
  for (std::string p = module.toStdString(); !p.empty(); p = parentPath(p)) expanded_.insert(p);
  relayout();
}

void Session::collapse(const QString& module) {
  if (!model_) return;
  const std::string path = module.toStdString();
  for (auto it = expanded_.begin(); it != expanded_.end();) {
    if (*it == path || it->starts_with(path + "."))
      it = expanded_.erase(it);
    else
      ++it;
  }
  relayout();
}

// The visible graph of a 100,000-op model takes a few hundred milliseconds to build: that is
// done off the UI thread too, then handed to the layout engine.
void Session::relayout() {
  if (!model_) return;
  const quint64 generation = ++buildGeneration_;
  if (!building_) {
    building_ = true;
    emit layoutBusyChanged(true);
  }
  using GraphPtr = std::shared_ptr<const ModelGraph>;
  auto* watcher = new QFutureWatcher<GraphPtr>(this);
  connect(watcher, &QFutureWatcher<GraphPtr>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != buildGeneration_) return;  // a newer expansion or model replaced it
    building_ = false;
    pendingGraph_ = watcher->result();
    if (!pendingGraph_ || pendingGraph_->model() != model_.get()) return;
    pendingLayout_ = layouts_->request(pendingGraph_->layoutGraph());
  });
  watcher->setFuture(QtConcurrent::run(
      workPool(),
      [](std::shared_ptr<const Model> model, std::set<std::string> expanded) -> GraphPtr {
        return std::make_shared<const ModelGraph>(std::move(model), std::move(expanded));
      },
      model_, expanded_));
}

quint64 Session::pinCurrent() {
  if (!current_ || !current_->series) {
    emit message(tr("Nothing to pin yet: no run has finished."));
    return 0;
  }
  // A preview's times are estimates that its real run is about to replace.
  if (current_->realRunFollows) {
    emit message(tr("The run is still under way: pin it when it is done."));
    return 0;
  }
  if (const Pin* same = pins_->findRequest(current_->request)) {
    emit message(tr("Already pinned as \"%1\".").arg(same->name));
    return same->id;
  }
  return pins_->add(*current_, runName(*current_));
}

void Session::onRunFinished(RunSnapshotPtr snapshot) {
  if (adoptRun(std::move(snapshot))) emit runFinished(current_);
}

bool Session::adoptRun(RunSnapshotPtr snapshot) {
  if (!snapshot || snapshot->model != model_) return false;
  // A failed run is no baseline to compare against: the ghost stays the last complete curve.
  if (current_ && current_->result->ok && !same_run(current_->request, snapshot->request)) {
    ghost_ = current_->series;
    ghostLabel_ = QString::fromStdString(describe_request(current_->request));
  }
  // Another device's curve is another allocator's memory (CPU bytes against PyTorch 2.x's on a
  // GPU): no baseline for what a configuration change buys.
  if (ghost_ && current_ &&
      current_->request.settings.device != snapshot->request.settings.device) {
    ghost_.reset();
    ghostLabel_.clear();
  }
  current_ = std::move(snapshot);
  return true;
}

}  // namespace ckpt::ui
