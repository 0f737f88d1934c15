#pragma once

// The Inspector dock: the selected op's tensors (shape, bytes, category, state at the cursor,
// which backward node saved them, when they are freed, their whole life) or the selected
// module (checkpointable or why not, its inputs and outputs, its segment's forward and
// recompute spans). A function of (snapshot, cursor, selection).

#include <QTextBrowser>

#include "ui/session/run_controller.hpp"

namespace ckpt::ui {

class Inspector : public QTextBrowser {
  Q_OBJECT

 public:
  explicit Inspector(QWidget* parent = nullptr);
  void setModel(std::shared_ptr<const Model> model);
  void setSnapshot(RunSnapshotPtr snapshot);
  void setCursorStep(std::int64_t step);
  void showOp(std::int64_t op);
  void showModule(const QString& module);
  // The op shown while nothing is selected (the op at the cursor), -1 for none.
  void setFollowedOp(std::int64_t op);
  std::int64_t selectedOp() const { return op_; }
  QString selectedModule() const { return module_; }

 signals:
  void stepLinkActivated(std::int64_t step);

 private:
  void refresh();
  QString opHtml(std::int64_t op) const;
  QString moduleHtml() const;
  QString tensorHtml(const std::string& value) const;
  QString stepLink(std::int64_t step) const;

  std::shared_ptr<const Model> model_;
  RunSnapshotPtr snapshot_;
  std::int64_t cursor_ = -1;
  std::int64_t op_ = -1;
  std::int64_t followed_ = -1;
  QString module_;
};

}  // namespace ckpt::ui
