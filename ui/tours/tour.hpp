#pragma once

// Guided lessons (Help ▸ Lessons): for each question the seeds ask, a short tour of steps. A step
// states the configuration it shows (what it leaves out, it inherits from the step before) and a
// caption whose {placeholders} are filled from the engine's run of that configuration, so what a
// lesson says is what the run measured. The tours live in resources/tours.json. In the code a
// guided lesson is a "tour", apart from the run's lessons (engine/report/lessons.hpp) that the
// Messages and lessons dock lists.

#include <QList>
#include <QString>
#include <QStringList>
#include <optional>
#include <set>
#include <string>

#include "engine/run/run_request.hpp"

namespace ckpt::ui {

struct RunSnapshot;

struct TourStep {
  QString caption;                               // rich text with {placeholders} (tourPlaceholders)
  QString sample;                                // the bundled sample this step shows
  std::optional<std::set<std::string>> modules;  // checkpointed modules
  std::optional<bool> reentrant;
  std::optional<bool> preserveRng;
  std::optional<SelectivePolicy> policy;
  std::optional<int> segments;        // checkpoint_sequential over the top-level modules
  std::optional<std::int64_t> batch;  // unset: the sample's
  // Whose memory: the CPU (this engine, the default) or CUDA (PyTorch 2.x's, a dry run).
  std::optional<Device> device;
  QString cursor;     // "", "start", "end", "peak", "first-recompute", "end-of-forward"
  QString highlight;  // a module to select in the graph, the module tree and the Inspector
};

struct Tour {
  QString id;
  QString title;
  QString question;       // what the user asked, in one line (the seed's words)
  QList<TourStep> steps;  // each step's sample and settings resolved (inheritance applied)
};

// The lessons of a lessons file; an error names the file, the lesson and the field.
QList<Tour> parseTours(const QByteArray& json, const QString& source);
// The bundled lessons (":/tours.json").
const QList<Tour>& bundledTours();

// The figures a caption may quote, from a finished run: {peak}, {baseline_peak},
// {peak_change}, {recompute}, {forward}, {backward}, {checkpoint_inputs}, {rng},
// {saved}, {status}, {messages}, {peak_at}.
QStringList tourPlaceholders();
// The caption with each {placeholder} replaced by the run's figure; {baseline_peak} and
// {peak_change} compare with the same settings without checkpoints (RunSummary::baseline), "—"
// where that run could not be made.
QString fillCaption(const QString& caption, const RunSnapshot& run);
// The step `cursor` names, in `run`'s trace; -1 for none.
std::int64_t tourCursorStep(const QString& cursor, const RunSnapshot& run);

}  // namespace ckpt::ui
