#pragma once

// The main window: graph above, memory plot and player below, docks for the module tree,
// Inspector, run summary, lessons, teaching notes and PyTorch code; a toolbar with the run's
// options. It only wires views to the Session; every view is a function of (snapshot, cursor,
// selection).

#include <QMainWindow>

#include "ui/app/theme.hpp"
#include "ui/session/session.hpp"

class QAction;
class QActionGroup;
class QCheckBox;
class QComboBox;
class QDockWidget;
class QSettings;
class QLabel;
class QMenu;
class QSpinBox;
class QTextBrowser;
class QToolBar;
class QToolButton;

namespace ckpt::ui {

class CodeView;
class PlanView;
class PinsView;
class GraphView;
class Inspector;
class LessonsView;
class MeasuredView;
struct LoadedSnapshot;
class MemoryPlot;
class ModuleTree;
class Player;
class PlayerBar;
class SummaryView;
class TourRunner;
class TourView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // readOnly: a render-only run (--screenshot) starts as the user's window would, but writes
  // no settings: no Open Recent entry, no window state of a render nobody saw.
  enum class SettingsUse { readWrite, readOnly };
  explicit MainWindow(QWidget* parent = nullptr, SettingsUse use = SettingsUse::readWrite);
  ~MainWindow() override;

  // Opens a file or an embedded sample (":/samples/...").
  void openPath(const QString& path);
  // Reads a PyTorch memory snapshot and shows it beside the model (main_window_snapshot.cpp);
  // false, with *error naming the file and the problem, when it cannot be read.
  bool openSnapshot(const QString& path, QString* error = nullptr);
  MeasuredView* measuredView() const { return measured_; }
  void openDefaultSample();
  // True once the current model has a laid-out graph and a finished run.
  bool isReady() const;

  Session* session() const { return session_; }
  GraphView* graphView() const { return graph_; }
  MemoryPlot* memoryPlot() const { return plot_; }
  Player* player() const { return player_; }
  PlayerBar* playerBar() const { return playerBar_; }
  ModuleTree* moduleTree() const { return modules_; }
  Inspector* inspector() const { return inspector_; }
  SummaryView* summaryView() const { return summary_; }
  LessonsView* lessonsView() const { return lessons_; }
  CodeView* codeView() const { return code_; }
  PlanView* planView() const { return plan_; }
  PinsView* pinsView() const { return pinsView_; }
  QAction* pinAction() const { return pinAction_; }
  QAction* undoAction() const { return undoAction_; }
  QAction* redoAction() const { return redoAction_; }
  TourRunner* tourRunner() const { return tours_; }
  TourView* tourView() const { return tourView_; }
  // Starts bundled lesson `index` (Help ▸ Lessons) and shows the Lesson dock.
  void startTour(int index);
  QLabel* banner() const { return banner_; }
  QStringList recentFiles() const { return recent_; }
  ThemeMode theme() const { return theme_; }
  void setTheme(ThemeMode mode);

  // The default geometry and dock layout for the current screen (View ▸ Reset Layout), or in
  // `geometry` (--size).
  void resetLayout();
  void applyDefaultLayout(const QRect& geometry);
  // The docks a user reads beside the graph: docked, shown, on the left or right.
  QList<QDockWidget*> sideDocks() const;

  bool exportGraph(const QString& path, QString* error = nullptr) const;
  bool exportPlot(const QString& path, QString* error = nullptr) const;

 signals:
  // The model's first run and layout are both done (for --screenshot and tests).
  void ready();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  // main_window.cpp: the widgets.
  void buildCentral();
  void buildDocks();
  void buildToolBar();
  void syncControls();
  void applyPalette();
  void checkReady();
  void showMessage(const QString& text, bool important = false);
  // main_window_run.cpp: the Session's signals to the views, the views' requests back.
  void wireRunOptions();
  // main_window_ranks.cpp: the Ranks control (FSDP2) beside Device, and its sync.
  void buildRanksControl(QToolBar* bar);
  void syncRanks();
  void sendFsdp();
  void wireSession();
  void wireViews();
  void onModelChanged();
  void onRunFinished(RunSnapshotPtr snapshot);
  void onCursor(std::int64_t step);
  QString describeStep(std::int64_t step, bool rich) const;
  // main_window_callouts.cpp: the banner and the callout over the graph.
  void updateBanner();
  void updateCallout();
  // main_window_menus.cpp: menus, files, export, theme, settings.
  void buildMenus();
  void buildFileMenu();
  void buildEditMenu();
  void buildViewMenu();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void exportDialog(bool graph);
  void loadSettings();
  void saveSettings() const;
  // main_window_layout.cpp: geometry and dock layout.
  void restoreWindowLayout(const QSettings& s);
  void arrangeDocks(int windowWidth);
  void repairUnreadableDocks();
  void scaleSideDocks(double factor);
  // main_window_pins.cpp: the Pin action, the Pinned dock's wiring and the plot's pinned curves.
  void buildPins();
  void updatePlotPins();
  // main_window_snapshot.cpp: the Measured dock, the plot's measured curve.
  void buildSnapshot();
  void openSnapshotDialog();
  void refreshMeasured();
  // main_window_tours.cpp: Help ▸ Lessons, the Lesson dock, the Notes' lesson links.
  void buildTours();
  QString tourLinksFor(const QString& source) const;

  Session* session_;
  Player* player_;
  GraphView* graph_ = nullptr;
  MemoryPlot* plot_ = nullptr;
  PlayerBar* playerBar_ = nullptr;
  ModuleTree* modules_ = nullptr;
  Inspector* inspector_ = nullptr;
  SummaryView* summary_ = nullptr;
  LessonsView* lessons_ = nullptr;
  QTextBrowser* notes_ = nullptr;
  CodeView* code_ = nullptr;
  PlanView* plan_ = nullptr;
  PinsView* pinsView_ = nullptr;
  QLabel* banner_ = nullptr;
  QLabel* callout_ = nullptr;
  QLabel* runState_ = nullptr;

  QComboBox* variant_ = nullptr;
  QCheckBox* preserveRng_ = nullptr;
  QComboBox* policy_ = nullptr;
  QComboBox* precision_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* optimizer_ = nullptr;
  QComboBox* ranks_ = nullptr;          // FSDP2's ranks: "none" or N
  QToolButton* fsdpOptions_ = nullptr;  // reshard after forward, reduce and param dtypes
  QAction* reshardAction_ = nullptr;
  QAction* reduceBf16Action_ = nullptr;
  QAction* paramBf16Action_ = nullptr;
  QSpinBox* batch_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QMenu* sampleMenu_ = nullptr;
  QMenu* viewMenu_ = nullptr;
  QActionGroup* themeGroup_ = nullptr;
  QAction* followAction_ = nullptr;
  QAction* pinAction_ = nullptr;
  QAction* undoAction_ = nullptr;
  QAction* redoAction_ = nullptr;
  QMenu* runMenu_ = nullptr;
  QMenu* helpMenu_ = nullptr;
  TourRunner* tours_ = nullptr;
  TourView* tourView_ = nullptr;
  MeasuredView* measured_ = nullptr;
  QDockWidget* measuredDock_ = nullptr;
  std::shared_ptr<const LoadedSnapshot> snapshot_;

  QStringList recent_;
  ThemeMode theme_ = ThemeMode::system;
  bool syncing_ = false;
  bool firstRunOfModel_ = true;
  bool readyEmitted_ = false;
  SettingsUse settingsUse_ = SettingsUse::readWrite;
  // False until the first show has placed the docks: resizes before it are the layout's own.
  bool layoutSettled_ = false;
  QSize pendingDefaultSize_;  // the size a default layout asked for, until it arrives
};

}  // namespace ckpt::ui
