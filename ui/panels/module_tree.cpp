#include "ui/panels/module_tree.hpp"

#include <QHeaderView>
#include <QMenu>

#include <algorithm>

namespace ckpt::ui {

namespace {
constexpr int kPathRole = Qt::UserRole + 1;
}

ModuleTree::ModuleTree(QWidget* parent) : QTreeWidget(parent) {
  setColumnCount(3);
  setHeaderLabels({tr("Module (✓ = checkpointed)"), tr("Type"), tr("Ops")});
  header()->setSectionResizeMode(0, QHeaderView::Stretch);
  // Not ResizeToContents: that measures every row on each layout, a visible stall with the
  // 1,000 modules of HeavyModel.
  header()->setSectionResizeMode(1, QHeaderView::Interactive);
  header()->setSectionResizeMode(2, QHeaderView::Interactive);
  header()->resizeSection(1, 84);
  header()->resizeSection(2, 36);
  setIndentation(14);
  header()->setStretchLastSection(false);
  setUniformRowHeights(true);
  setContextMenuPolicy(Qt::CustomContextMenu);
  connect(this, &QTreeWidget::itemChanged, this, &ModuleTree::onItemChanged);
  connect(this, &QTreeWidget::customContextMenuRequested, this, &ModuleTree::showMenu);
  connect(this, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (item && !updating_) emit moduleSelected(item->data(0, kPathRole).toString());
  });
}

void ModuleTree::setModel(std::shared_ptr<const Model> model) {
  updating_ = true;
  clear();
  items_.clear();
  model_ = std::move(model);
  if (model_) {
    std::vector<std::pair<const Module*, QTreeWidgetItem*>> stack;
    for (auto it = model_->root.children.rbegin(); it != model_->root.children.rend(); ++it)
      stack.push_back({it->get(), nullptr});
    std::vector<QTreeWidgetItem*> top;
    while (!stack.empty()) {
      auto [m, parent] = stack.back();
      stack.pop_back();
      auto* item = new QTreeWidgetItem;
      item->setText(0, QString::fromStdString(m->name));
      item->setText(1, QString::fromStdString(m->kind));
      item->setText(2, QString::number(m->end_op - m->first_op));
      item->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
      item->setData(0, kPathRole, QString::fromStdString(m->path));
      Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
      if (m->checkpointable) flags |= Qt::ItemIsUserCheckable;
      item->setFlags(flags);
      item->setCheckState(0, Qt::Unchecked);
      QString tip =
          QStringLiteral("<b>%1</b>").arg(QString::fromStdString(m->path).toHtmlEscaped());
      if (!m->checkpointable)
        tip += tr("<br>Cannot be checkpointed: %1")
                   .arg(QString::fromStdString(m->not_checkpointable_reason).toHtmlEscaped());
      else
        tip += tr("<br>Tick to run it under checkpoint().");
      item->setToolTip(0, tip);
      if (!m->checkpointable) item->setForeground(0, palette().brush(QPalette::PlaceholderText));
      if (parent)
        parent->addChild(item);
      else
        top.push_back(item);
      items_[m->path] = item;
      for (auto it = m->children.rbegin(); it != m->children.rend(); ++it)
        stack.push_back({it->get(), item});
    }
    // Adding the top level last keeps one layout pass for a 1,000-module tree.
    addTopLevelItems(QList<QTreeWidgetItem*>(top.begin(), top.end()));
    if (items_.size() <= 200) expandToDepth(1);
  }
  updating_ = false;
}

void ModuleTree::setCheckpointed(const std::set<std::string>& modules) {
  updating_ = true;
  for (auto& [path, item] : items_) {
    const Qt::CheckState want = modules.count(path) ? Qt::Checked : Qt::Unchecked;
    if (item->checkState(0) != want) item->setCheckState(0, want);
    // A checkpointed module is never hidden inside a collapsed branch.
    if (want == Qt::Checked)
      for (QTreeWidgetItem* p = item->parent(); p; p = p->parent()) p->setExpanded(true);
  }
  updating_ = false;
}

void ModuleTree::setOffloaded(const std::set<std::string>& modules) {
  if (modules == offloaded_) return;
  // A font or tooltip change is an itemChanged to QTreeWidget: not a click on the checkbox.
  updating_ = true;
  for (auto& [path, item] : items_) {
    const bool now = modules.count(path) > 0;
    if (now == (offloaded_.count(path) > 0)) continue;
    QFont f = item->font(0);
    f.setItalic(now);
    item->setFont(0, f);
    item->setToolTip(0, now ? tr("%1: its saved tensors wait in host memory (save_on_cpu)")
                                  .arg(QString::fromStdString(path))
                            : QString());
  }
  offloaded_ = modules;
  updating_ = false;
}

QTreeWidgetItem* ModuleTree::itemFor(const QString& module) const {
  auto it = items_.find(module.toStdString());
  return it == items_.end() ? nullptr : it->second;
}

void ModuleTree::selectModule(const QString& module) {
  if (QTreeWidgetItem* item = itemFor(module)) {
    updating_ = true;
    setCurrentItem(item);
    scrollToItem(item);
    updating_ = false;
  }
}

void ModuleTree::onItemChanged(QTreeWidgetItem* item, int column) {
  if (updating_ || column != 0) return;
  emit toggleRequested(item->data(0, kPathRole).toString());
}

// Freeze: what PyTorch does not train (a registered buffer, requires_grad=False) gets no
// gradient and no op keeps anything for one. An ONNX file does not say which initializers
// those are; the user does, for the module's parameters together or one at a time.
void ModuleTree::addFreezeActions(QMenu& menu, const std::string& path) {
  const Module* m = model_->find_module(path);
  if (!m || m->parameters.empty()) return;
  const auto frozenByUser = [this](const std::string& pattern) {
    return std::find(frozen_.begin(), frozen_.end(), pattern) != frozen_.end();
  };
  QMenu* sub = menu.addMenu(tr("Freeze (treat as buffers)"));
  QAction* all =
      sub->addAction(tr("All parameters of %1").arg(QString::fromStdString(path)), this,
                     [this, path] { emit freezeToggleRequested(QString::fromStdString(path)); });
  all->setCheckable(true);
  all->setChecked(frozenByUser(path));
  sub->addSeparator();
  for (const std::string& name : m->parameters) {
    const ParameterInfo* p = model_->find_parameter(name);
    if (!p) continue;
    QAction* one = sub->addAction(QString::fromStdString(name), this, [this, name] {
      emit freezeToggleRequested(QString::fromStdString(name));
    });
    one->setCheckable(true);
    one->setChecked(!p->requires_grad || p->is_buffer);
    // What the file or the op says (BatchNorm's running statistics, ckptlab.buffers) is not
    // the user's to undo here.
    one->setEnabled(frozenByUser(name) || (p->requires_grad && !p->is_buffer));
  }
}

void ModuleTree::showMenu(const QPoint& pos) {
  QTreeWidgetItem* item = itemAt(pos);
  if (!item || !model_) return;
  const QString path = item->data(0, kPathRole).toString();
  QMenu menu(this);
  menu.addAction(tr("Show in graph"), this, [this, path] { emit expandInGraphRequested(path); });
  std::string definition;
  // "All instances" applies to every call of the same module definition (cell, cell_1, ...).
  std::vector<const Module*> stack{&model_->root};
  while (!stack.empty() && definition.empty()) {
    const Module* m = stack.back();
    stack.pop_back();
    if (m->path == path.toStdString()) definition = m->definition;
    for (const auto& c : m->children) stack.push_back(c.get());
  }
  if (!definition.empty()) {
    const QString def = QString::fromStdString(definition);
    menu.addAction(tr("Checkpoint all instances of %1").arg(def), this,
                   [this, def] { emit setAllInstancesRequested(def, true); });
    menu.addAction(tr("Checkpoint no instance of %1").arg(def), this,
                   [this, def] { emit setAllInstancesRequested(def, false); });
  }
  // Offload: a third choice beside keeping and recomputing (a GPU's, Session says why not on
  // the CPU).
  QAction* offload = menu.addAction(tr("Offload saved tensors to host memory (GPU)"), this,
                                    [this, path] { emit offloadToggleRequested(path); });
  offload->setCheckable(true);
  offload->setChecked(offloaded_.count(path.toStdString()) > 0);
  addFreezeActions(menu, path.toStdString());
  menu.exec(viewport()->mapToGlobal(pos));
}

}  // namespace ckpt::ui
