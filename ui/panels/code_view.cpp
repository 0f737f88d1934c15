#include "ui/panels/code_view.hpp"

#include <QFontDatabase>
#include <QScrollBar>

#include "engine/plan/pytorch_code.hpp"

namespace ckpt::ui {

CodeView::CodeView(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
}

void CodeView::setConfig(std::shared_ptr<const Model> model, const CheckpointConfig& config) {
  if (!model) {
    setPlainText(QString());
    return;
  }
  const int scroll = verticalScrollBar()->value();
  try {
    setPlainText(QString::fromStdString(pytorch_code(*model, config)));
  } catch (const std::exception& e) {
    setPlainText(
        tr("# The PyTorch code could not be written: %1").arg(QString::fromUtf8(e.what())));
  }
  verticalScrollBar()->setValue(scroll);
}

}  // namespace ckpt::ui
