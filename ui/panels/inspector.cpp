#include "ui/panels/inspector.hpp"

#include <QScrollBar>
#include <QUrl>

#include "ui/core/memory_series.hpp"
#include "ui/core/model_graph.hpp"
#include "ui/style/palette.hpp"

namespace ckpt::ui {

namespace {

QString esc(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}
QString bytes(std::int64_t b) {
  return QStringLiteral("%1 (%2 B)").arg(QString::fromStdString(formatBytes(b))).arg(b);
}

QString row(const QString& key, const QString& value) {
  return QStringLiteral("<tr><td style='padding-right:10px;color:gray'>%1</td><td>%2</td></tr>")
      .arg(key, value);
}

}  // namespace

Inspector::Inspector(QWidget* parent) : QTextBrowser(parent) {
  setOpenLinks(false);
  connect(this, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() == QLatin1String("step")) emit stepLinkActivated(url.path().toLongLong());
  });
  refresh();
}

void Inspector::setModel(std::shared_ptr<const Model> model) {
  model_ = std::move(model);
  snapshot_.reset();
  op_ = -1;
  module_.clear();
  refresh();
}

void Inspector::setSnapshot(RunSnapshotPtr snapshot) {
  snapshot_ = std::move(snapshot);
  refresh();
}

void Inspector::setCursorStep(std::int64_t step) {
  if (cursor_ == step) return;
  cursor_ = step;
  if (isVisible()) refresh();
}

void Inspector::showOp(std::int64_t op) {
  op_ = op;
  module_.clear();
  refresh();
}

void Inspector::setFollowedOp(std::int64_t op) {
  if (followed_ == op) return;
  followed_ = op;
  if (op_ < 0 && module_.isEmpty() && isVisible()) refresh();
}

void Inspector::showModule(const QString& module) {
  module_ = module;
  op_ = -1;
  refresh();
}

QString Inspector::stepLink(std::int64_t step) const {
  if (step < 0) return QStringLiteral("—");
  QString text = QString::number(step);
  if (snapshot_ && step < snapshot_->trace().step_count())
    text +=
        QStringLiteral(" (%1)").arg(QLatin1String(phase_name(snapshot_->trace().step(step).phase)));
  return QStringLiteral("<a href='step:%1'>%2</a>").arg(step).arg(text);
}

void Inspector::refresh() {
  QString body;
  if (!model_)
    body = tr("<p><i>No model.</i></p>");
  else if (op_ >= 0 && op_ < static_cast<std::int64_t>(model_->ops.size()))
    body = opHtml(op_);
  else if (!module_.isEmpty())
    body = moduleHtml();
  else if (followed_ >= 0 && followed_ < static_cast<std::int64_t>(model_->ops.size()))
    body = tr("<p style='color:gray'><i>The op at the cursor (click an op in the graph to keep "
              "one).</i></p>") +
           opHtml(followed_);
  else
    body =
        tr("<p><i>Click an op in the graph to inspect its tensors, or a module in the module "
           "tree.</i></p>");
  const int scroll = verticalScrollBar()->value();
  setHtml(body);
  verticalScrollBar()->setValue(scroll);
}

QString Inspector::tensorHtml(const std::string& value) const {
  QString out = QStringLiteral("<h4 style='margin-bottom:2px'>%1</h4><table>").arg(esc(value));
  if (auto it = model_->values.find(value); it != model_->values.end())
    out += row(tr("shape (as loaded)"), esc(shape_str(it->second.shape)) + " " +
                                            QLatin1String(dtype_name(it->second.dtype)));
  if (!snapshot_) return out + QStringLiteral("</table>");
  const Trace& trace = snapshot_->trace();
  const std::int64_t t = trace.tensor_index(value);
  if (t < 0) {
    out += row(tr("in this run"), tr("not recorded (no allocation of its own, or not reached)"));
    return out + QStringLiteral("</table>");
  }
  const TensorLife& life = trace.tensors()[static_cast<std::size_t>(t)];
  out += row(tr("bytes"), bytes(life.bytes));
  if (cursor_ >= 0 && cursor_ < trace.step_count()) {
    const ActivationState s = trace.state_at(t, cursor_);
    const Palette pal = Palette::forApplication();
    out += row(tr("state at step %1").arg(cursor_),
               QStringLiteral("<span style='background:%1;color:%2'>&nbsp;%3&nbsp;</span>")
                   .arg(pal.state(s).name(), pal.stateText(s).name(), stateLabel(s)));
  }
  if (life.saved_at_step >= 0)
    out += row(tr("saved for backward by"),
               esc(life.saved_by_op) + tr(" at step ") + stepLink(life.saved_at_step));
  else
    out += row(tr("saved for backward"), tr("no (nothing keeps it for the backward pass)"));
  std::int64_t freedAt = -1;
  QStringList history;
  for (const auto& [step, state] : life.transitions) {
    history << QStringLiteral("%1 at %2").arg(stateLabel(state), stepLink(step));
    if (state == ActivationState::freed) freedAt = step;
  }
  out += row(tr("freed at"), freedAt >= 0 ? stepLink(freedAt) : tr("not freed in this run"));
  out += row(tr("life"), history.join(QStringLiteral(" → ")));
  return out + QStringLiteral("</table>");
}

QString Inspector::opHtml(std::int64_t index) const {
  const OpNode& op = model_->ops[static_cast<std::size_t>(index)];
  QString out = QStringLiteral("<h3 style='margin-bottom:2px'>%1</h3><p>%2")
                    .arg(esc(op.name), esc(op.op_type));
  if (!op.module.empty()) out += tr(" in <b>%1</b>").arg(esc(op.module));
  out += QStringLiteral("</p>");
  QStringList inputs;
  for (const auto& in : op.inputs)
    if (!in.empty()) inputs << esc(in);
  out += QStringLiteral("<table>") + row(tr("inputs"), inputs.join(QStringLiteral(", ")));
  // An op a pattern rule fused from several ONNX nodes lists them (the model keeps the list).
  if (!op.fused.empty()) {
    QStringList parts;
    for (const auto& n : op.fused) parts << esc(n);
    out += row(tr("fused from %1 ONNX nodes").arg(op.fused.size()),
               parts.join(QStringLiteral("<br>")));
  }
  out += QStringLiteral("</table>");
  for (const auto& v : op.outputs) out += tensorHtml(v);
  return out;
}

QString Inspector::moduleHtml() const {
  const Module* m = findModule(model_->root, module_.toStdString());
  if (!m) return tr("<p>No module named %1.</p>").arg(module_.toHtmlEscaped());
  QString out = QStringLiteral("<h3 style='margin-bottom:2px'>%1</h3><p>%2</p><table>")
                    .arg(esc(m->path), esc(m->kind));
  out += row(tr("ops"), QStringLiteral("%1 (op %2 to %3)")
                            .arg(m->end_op - m->first_op)
                            .arg(m->first_op)
                            .arg(m->end_op - 1));
  out += row(tr("checkpointable"),
             m->checkpointable ? tr("yes") : tr("no: %1").arg(esc(m->not_checkpointable_reason)));
  QStringList ins, outs;
  for (const auto& v : m->inputs) ins << esc(v);
  for (const auto& v : m->outputs) outs << esc(v);
  out += row(tr("inputs (what checkpoint() keeps)"), ins.join(QStringLiteral(", ")));
  out += row(tr("outputs"), outs.join(QStringLiteral(", ")));
  if (snapshot_) {
    const bool on = snapshot_->request.plan.modules.count(m->path) > 0;
    out += row(tr("checkpointed"), on ? tr("<b>yes</b>") : tr("no"));
    const Trace& trace = snapshot_->trace();
    QStringList forwards, recomputes;
    for (const auto& c : trace.checkpoints())
      if (c.segment == m->path)
        forwards << QStringLiteral("%1–%2").arg(stepLink(c.begin_step), stepLink(c.end_step - 1));
    for (const auto& r : trace.recomputes())
      if (r.segment == m->path)
        recomputes << QStringLiteral("%1–%2").arg(stepLink(r.begin_step), stepLink(r.end_step - 1));
    if (on) {
      out += row(tr("forward under checkpoint"),
                 forwards.isEmpty() ? tr("—") : forwards.join(QStringLiteral(", ")));
      out += row(tr("recomputed"),
                 recomputes.isEmpty()
                     ? tr("<b>never</b> (no tensor of the segment was needed by the backward)")
                     : recomputes.join(QStringLiteral(", ")));
      // The RNG state the segment stashed itself (the trace records it per checkpoint).
      for (const auto& c : trace.checkpoints()) {
        if (c.segment != m->path) continue;
        out += row(tr("RNG state stashed"),
                   c.rng_bytes > 0 ? bytes(c.rng_bytes) +
                                         tr(" (the generator's state, kept until the recompute)")
                                   : tr("none (preserve_rng_state off)"));
        break;
      }
    }
  }
  return out + QStringLiteral("</table>");
}

}  // namespace ckpt::ui
