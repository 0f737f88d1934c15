#include "ui/panels/code_view.hpp"

#include <QFontDatabase>
#include <QFutureWatcher>
#include <QScrollBar>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/plan/pytorch_code.hpp"
#include "ui/util/work_pool.hpp"

namespace ckpt::ui {

CodeView::CodeView(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
}

// Writing the code walks the whole model: 85-120 ms for HeavyModel's 1,000 calls, measured on
// the UI thread at every click. It is a pure function of (model, request), so it runs on the work
// pool and only the newest request's text is shown.
void CodeView::setRequest(std::shared_ptr<const Model> model, const RunRequest& request) {
  const quint64 generation = ++generation_;
  if (!model) {
    setPlainText(QString());
    emit codeUpdated();
    return;
  }
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != generation_) return;  // a newer configuration replaced this one
    const int scroll = verticalScrollBar()->value();
    setPlainText(watcher->result());
    verticalScrollBar()->setValue(scroll);
    emit codeUpdated();
  });
  watcher->setFuture(QtConcurrent::run(
      workPool(),
      [](std::shared_ptr<const Model> m, RunRequest c) {
        try {
          return QString::fromStdString(pytorch_code(*m, c));
        } catch (const std::exception& e) {
          return tr("# The PyTorch code could not be written: %1").arg(QString::fromUtf8(e.what()));
        }
      },
      std::move(model), request));
}

}  // namespace ckpt::ui
