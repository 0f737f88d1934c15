#pragma once

// Plays a lesson on the window's session: Next and Back apply a step's settings (opening its
// sample when it changes), and once the engine's run of that configuration is shown, the step's
// caption is filled from it and the player's cursor goes where the step points. The lesson
// panel asks this object what to show; it computes nothing itself.

#include <QObject>
#include <QString>
#include <optional>

#include "ui/tours/tour.hpp"

namespace ckpt::ui {

class Session;
class Player;

class TourRunner : public QObject {
  Q_OBJECT
 public:
  TourRunner(Session* session, Player* player, QObject* parent = nullptr);

  void start(const Tour& tour);
  void stop();
  bool active() const { return tour_.has_value(); }
  const Tour* tour() const { return tour_ ? &*tour_ : nullptr; }
  int stepIndex() const { return index_; }
  int stepCount() const { return tour_ ? static_cast<int>(tour_->steps.size()) : 0; }
  bool canGoBack() const { return active() && index_ > 0; }
  bool canGoNext() const { return active() && index_ + 1 < stepCount(); }
  // The step's run is the one shown (its caption's figures are real, its cursor placed).
  bool settled() const;
  // The user changed the settings away from the step's (a click in the graph, the toolbar).
  bool deviated() const;
  // The caption with its figures filled in; "…" for each while the run is under way.
  QString caption() const;
  // The request the current step makes (model defaults filled in).
  RunRequest expectedRequest() const;
  // The peak of the step's settings without checkpoints, once the step's run is shown (the
  // engine runs it beside every run); empty when it could not run.
  std::optional<std::int64_t> baselinePeak() const;

 public slots:
  void next();
  void back();

 signals:
  void changed();
  void highlightRequested(const QString& module);

 private:
  void apply();
  void configure();
  void onRunShown();
  // The session shows the engine's run of the step's configuration.
  bool runMatches() const;

  Session* session_;
  Player* player_;
  std::optional<Tour> tour_;
  int index_ = 0;
  bool awaitingModel_ = false;
  bool placed_ = false;  // the current step's cursor and highlight are applied
};

}  // namespace ckpt::ui
