#pragma once

// The module tree dock: every module instance with a checkbox that checkpoints it (the same
// toggle as clicking its cluster), greyed out with the reason when it cannot be.

#include <QMenu>
#include <QTreeWidget>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/model/model.hpp"

namespace ckpt::ui {

class ModuleTree : public QTreeWidget {
  Q_OBJECT

 public:
  explicit ModuleTree(QWidget* parent = nullptr);
  void setModel(std::shared_ptr<const Model> model);
  void setCheckpointed(const std::set<std::string>& modules);
  // Modules whose saved tensors are offloaded to host memory: marked in the tree's Type column
  // and checked in their context menu.
  void setOffloaded(const std::set<std::string>& modules);
  // The patterns the user froze (Session::frozen()): checked in the context menu.
  void setFrozen(const std::vector<std::string>& patterns) { frozen_ = patterns; }
  void selectModule(const QString& module);
  QTreeWidgetItem* itemFor(const QString& module) const;

 signals:
  void toggleRequested(const QString& module);
  void moduleSelected(const QString& module);
  void expandInGraphRequested(const QString& module);
  void setAllInstancesRequested(const QString& definition, bool checkpointed);
  void offloadToggleRequested(const QString& module);
  // "Freeze" in the context menu: a module's parameters, or one of them, taken as not
  // trainable (a buffer, requires_grad=False), or no longer (Session::toggleFrozen).
  void freezeToggleRequested(const QString& pattern);

 private:
  void onItemChanged(QTreeWidgetItem* item, int column);
  void showMenu(const QPoint& pos);
  void addFreezeActions(QMenu& menu, const std::string& path);

  std::set<std::string> offloaded_;
  std::vector<std::string> frozen_;
  std::shared_ptr<const Model> model_;
  std::unordered_map<std::string, QTreeWidgetItem*> items_;
  bool updating_ = false;
};

}  // namespace ckpt::ui
