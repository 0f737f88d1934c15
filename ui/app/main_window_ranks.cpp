// MainWindow: the Ranks control beside Device. FSDP2 (`fully_shard` on every block and the
// root): how many GPUs share the model, whether blocks reshard after their forward, and the
// dtypes of the reduce-scatter and of the parameters computed with. The Session runs the
// request; the report, the plot and the plans then show one rank (engine/report/fsdp_memory).

#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QRegularExpressionValidator>
#include <QToolBar>
#include <QToolButton>

#include "engine/report/fsdp_memory.hpp"
#include "ui/app/main_window.hpp"

namespace ckpt::ui {

namespace {

constexpr int kMaxRanks = 65536;  // --fsdp's bound

// "none" → 0, "8" → 8; -1 for anything else.
int ranksOf(const QString& text) {
  const QString t = text.trimmed();
  if (t.isEmpty() || t.compare(QLatin1String("none"), Qt::CaseInsensitive) == 0) return 0;
  bool ok = false;
  const int n = t.toInt(&ok);
  return ok && n >= 0 && n <= kMaxRanks ? n : -1;
}

}  // namespace

void MainWindow::buildRanksControl(QToolBar* bar) {
  bar->addWidget(new QLabel(tr(" Ranks ")));
  ranks_ = new QComboBox;
  ranks_->setObjectName(QStringLiteral("ranksBox"));
  ranks_->setEditable(true);
  ranks_->setInsertPolicy(QComboBox::NoInsert);
  ranks_->addItem(tr("none"));
  for (int n : {1, 2, 4, 8, 16, 32, 64}) ranks_->addItem(QString::number(n));
  ranks_->setValidator(new QRegularExpressionValidator(
      QRegularExpression(QStringLiteral("none|[0-9]{1,5}")), ranks_));
  ranks_->lineEdit()->setMaxLength(5);
  ranks_->setMinimumContentsLength(4);
  ranks_->setToolTip(
      tr("FSDP2 (--fsdp N): the number of GPUs fully_shard spreads the model over, on every "
         "block and then the root, as torchtitan applies it. Pick one or type any N. The plot, "
         "the summary and the plans then show one rank: sharded parameters, gradients and "
         "optimizer state, the gathered blocks, the reduce-scatter's buffers and the "
         "activations. %1. none: one GPU, not sharded.")
          .arg(QLatin1String(kFsdpNotMeasured)));
  bar->addWidget(ranks_);

  fsdpOptions_ = new QToolButton;
  fsdpOptions_->setObjectName(QStringLiteral("fsdpOptions"));
  fsdpOptions_->setText(tr("FSDP2"));
  fsdpOptions_->setPopupMode(QToolButton::InstantPopup);
  fsdpOptions_->setToolTip(
      tr("FSDP2's options: reshard after forward, the reduce dtype and "
         "the parameters' dtype (MixedPrecisionPolicy)"));
  auto* menu = new QMenu(fsdpOptions_);
  reshardAction_ = menu->addAction(tr("Reshard after forward"));
  reshardAction_->setObjectName(QStringLiteral("reshardAction"));
  reshardAction_->setCheckable(true);
  reshardAction_->setToolTip(
      tr("reshard_after_forward: free each block's gathered parameters after its forward and "
         "gather them again for its backward (False keeps them to the backward)"));
  menu->addSection(tr("Reduce dtype"));
  auto* reduce = new QActionGroup(menu);
  QAction* reduceFp32 = menu->addAction(tr("reduce in float32"));
  reduceBf16Action_ = menu->addAction(tr("reduce in bfloat16"));
  reduceBf16Action_->setObjectName(QStringLiteral("reduceBf16Action"));
  menu->addSection(tr("Parameters"));
  auto* param = new QActionGroup(menu);
  QAction* paramFp32 = menu->addAction(tr("compute in float32"));
  paramBf16Action_ = menu->addAction(tr("compute in bfloat16 (--param-dtype bf16)"));
  paramBf16Action_->setObjectName(QStringLiteral("paramBf16Action"));
  for (QAction* a : {reduceFp32, reduceBf16Action_}) {
    a->setCheckable(true);
    reduce->addAction(a);
  }
  for (QAction* a : {paramFp32, paramBf16Action_}) {
    a->setCheckable(true);
    param->addAction(a);
  }
  fsdpOptions_->setMenu(menu);
  bar->addWidget(fsdpOptions_);

  connect(ranks_, &QComboBox::currentIndexChanged, this, [this] { sendFsdp(); });
  connect(ranks_->lineEdit(), &QLineEdit::editingFinished, this, [this] { sendFsdp(); });
  for (QAction* a : {reshardAction_, reduceFp32, reduceBf16Action_})
    connect(a, &QAction::triggered, this, [this] { sendFsdp(); });
  for (QAction* a : {paramFp32, paramBf16Action_})
    connect(a, &QAction::triggered, this, [this] {
      if (!syncing_)
        session_->setParamDtype(paramBf16Action_->isChecked() ? DType::bf16 : DType::f32);
    });
}

void MainWindow::sendFsdp() {
  if (syncing_) return;
  const int n = ranksOf(ranks_->currentText());
  if (n < 0) {
    showMessage(tr("Ranks: \"%1\" is not a number of GPUs (none, or 1 to %2)")
                    .arg(ranks_->currentText())
                    .arg(kMaxRanks),
                true);
    syncRanks();
    return;
  }
  FsdpSettings fsdp;
  fsdp.ranks = n;
  fsdp.reshard_after_forward = reshardAction_->isChecked();
  fsdp.reduce_dtype = reduceBf16Action_->isChecked() ? DType::bf16 : DType::f32;
  session_->setFsdp(fsdp);
}

void MainWindow::syncRanks() {
  const bool was = syncing_;
  syncing_ = true;
  const RunSettings& s = session_->request().settings;
  const QString text = s.fsdp.ranks > 0 ? QString::number(s.fsdp.ranks) : tr("none");
  const int at = ranks_->findText(text);
  if (at >= 0)
    ranks_->setCurrentIndex(at);
  else
    ranks_->setEditText(text);
  reshardAction_->setChecked(s.fsdp.reshard_after_forward);
  reduceBf16Action_->setChecked(s.fsdp.reduce_dtype == DType::bf16);
  for (QAction* a : reduceBf16Action_->actionGroup()->actions())
    if (a != reduceBf16Action_) a->setChecked(s.fsdp.reduce_dtype != DType::bf16);
  paramBf16Action_->setChecked(s.param_dtype == DType::bf16);
  for (QAction* a : paramBf16Action_->actionGroup()->actions())
    if (a != paramBf16Action_) a->setChecked(s.param_dtype != DType::bf16);
  const bool has = session_->model() != nullptr;
  ranks_->setEnabled(has);
  fsdpOptions_->setEnabled(has);
  fsdpOptions_->setText(s.fsdp.ranks > 0 || s.param_dtype != DType::f32
                            ? tr("FSDP2 · %1%2")
                                  .arg(QLatin1String(dtype_name(s.param_dtype)))
                                  .arg(s.fsdp.reshard_after_forward ? QString() : tr(" · kept"))
                            : tr("FSDP2"));
  syncing_ = was;
}

}  // namespace ckpt::ui
