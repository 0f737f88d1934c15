#include "ui/panels/code_view.hpp"

#include <QFontDatabase>
#include <QScrollBar>

// TEMPORARY bridge until engine/plan/pytorch_code.hpp lands on main (model helper); removed
// as soon as it does.
#if __has_include("engine/plan/pytorch_code.hpp")
#include "engine/plan/pytorch_code.hpp"
#define CKPTLAB_HAS_PYTORCH_CODE 1
#endif

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
#ifdef CKPTLAB_HAS_PYTORCH_CODE
    setPlainText(QString::fromStdString(pytorch_code(*model, config)));
#else
    (void)config;
    setPlainText(tr("# PyTorch code export is not part of this build yet."));
#endif
  } catch (const std::exception& e) {
    setPlainText(
        tr("# The PyTorch code could not be written: %1").arg(QString::fromUtf8(e.what())));
  }
  verticalScrollBar()->setValue(scroll);
}

}  // namespace ckpt::ui
