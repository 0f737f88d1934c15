#pragma once

// Pinned comparisons: snapshots of runs the user chose to keep beside the current one, each
// with a name, a colour of its own and a visible flag. A pin owns its run's curve and figures,
// so switching the variant, policy or batch leaves it as it was; opening another model clears
// the list (its runs belong to the old model). The plot and the Pinned table only read it.

#include <QColor>
#include <QObject>
#include <QString>
#include <vector>

#include "engine/report/run_summary.hpp"
#include "ui/session/run_controller.hpp"

namespace ckpt::ui {

// The figures a comparison row shows; each defined once in engine/report/figures.hpp.
struct PinFigures {
  bool ok = false;
  bool dryRun = false;  // bytes exact, time estimated
  std::int64_t peakBytes = 0;
  std::int64_t savedBytes = 0;  // saved_for_backward(): activations + checkpoint inputs
  std::int64_t recomputeExecutions = 0;
  double totalMs = 0;
};
PinFigures pinFigures(const RunSummary& summary);
// A run's name in the comparison ("features.denseblock1, reentrant, batch 16"): its
// configuration in a few words, its batch, and whether it was a dry run or failed.
QString runName(const RunSnapshot& snapshot);

struct Pin {
  quint64 id = 0;
  QString name;
  QColor colour;
  bool visible = true;
  RunRequest request;
  MemorySeriesPtr series;
  RunSummary summary;
  PinFigures figures;
};

// What is saved of a pin between sessions: its name, whether it is shown, and the configuration
// that is run again to restore its curve and figures (a run is not saved, it is recomputed).
struct SavedPin {
  QString name;
  bool visible = true;
  RunRequest request;
};
QByteArray savedPinsJson(const std::vector<Pin>& pins);
// The pins in `json`, each configuration `base` (the model's own) with the saved settings
// applied; what cannot be read is left out (a settings file is outside input).
std::vector<SavedPin> savedPinsFromJson(const QByteArray& json, const RunRequest& base);

class PinList : public QObject {
  Q_OBJECT

 public:
  explicit PinList(QObject* parent = nullptr) : QObject(parent) {}

  const std::vector<Pin>& pins() const { return pins_; }
  const Pin* find(quint64 id) const;
  // The pin of this configuration, if there is one: pinning it twice would add nothing.
  const Pin* findRequest(const RunRequest& request) const;
  // Pins `snapshot` under `name`; returns the new pin's id.
  quint64 add(const RunSnapshot& snapshot, const QString& name);
  bool remove(quint64 id);
  bool setVisible(quint64 id, bool visible);
  bool rename(quint64 id, const QString& name);
  void clear();

  // The fixed palette pins take their colours from, first unused first.
  static const std::vector<QColor>& palette();

 signals:
  void changed();

 private:
  Pin* findMutable(quint64 id);
  QColor nextColour() const;

  std::vector<Pin> pins_;
  quint64 nextId_ = 1;
};

}  // namespace ckpt::ui
