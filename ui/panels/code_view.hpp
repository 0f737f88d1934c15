#pragma once

// "PyTorch code" of the current configuration: the sample's forward with checkpoint(...) calls
// where the user put them, or for an ONNX model the code that wraps the chosen submodules.

#include <QPlainTextEdit>

#include "engine/run/run_request.hpp"

namespace ckpt::ui {

class CodeView : public QPlainTextEdit {
  Q_OBJECT

 public:
  explicit CodeView(QWidget* parent = nullptr);
  // Written off the UI thread: the text changes (and codeUpdated() is emitted) when it is ready.
  void setRequest(std::shared_ptr<const Model> model, const RunRequest& request);

 signals:
  void codeUpdated();

 private:
  quint64 generation_ = 0;
};

}  // namespace ckpt::ui
