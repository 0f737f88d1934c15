#include "ui/panels/lessons_view.hpp"

#include <QApplication>
#include <QStyle>

namespace ckpt::ui {

LessonsView::LessonsView(QWidget* parent) : QListWidget(parent) {
  setWordWrap(true);
  setAlternatingRowColors(true);
  connect(this, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const std::int64_t step = item->data(Qt::UserRole).toLongLong();
    if (step >= 0) emit stepRequested(step);
  });
}

void LessonsView::setLessons(const std::vector<Lesson>& lessons) {
  clear();
  QStyle* st = QApplication::style();
  for (const Lesson& l : lessons) {
    QString text = QString::fromStdString(l.title);
    if (l.step >= 0) text = tr("step %1 · ").arg(l.step) + text;
    auto* item = new QListWidgetItem(text, this);
    item->setData(Qt::UserRole, static_cast<qlonglong>(l.step));
    item->setToolTip(QString::fromStdString(l.text));
    const auto icon = l.severity == Severity::error     ? QStyle::SP_MessageBoxCritical
                      : l.severity == Severity::warning ? QStyle::SP_MessageBoxWarning
                                                        : QStyle::SP_MessageBoxInformation;
    item->setIcon(st->standardIcon(icon));
  }
  if (lessons.empty()) {
    auto* item = new QListWidgetItem(tr("No warnings, errors or lessons in this run."), this);
    item->setData(Qt::UserRole, qlonglong(-1));
    item->setFlags(Qt::ItemIsEnabled);
  }
}

}  // namespace ckpt::ui
