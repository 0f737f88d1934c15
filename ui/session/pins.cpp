#include "ui/session/pins.hpp"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>

#include "engine/report/config_text.hpp"
#include "engine/report/figures.hpp"

namespace ckpt::ui {

PinFigures pinFigures(const RunSummary& s) {
  PinFigures f;
  f.ok = s.ok;
  f.dryRun = s.dry_run;
  f.peakBytes = s.peak.bytes;
  f.savedBytes = saved_for_backward(s.end_of_forward);
  f.recomputeExecutions = s.executions.recompute;
  f.totalMs = s.times.total_ms;
  return f;
}

QString runName(const RunSnapshot& snap) {
  QString name = QString::fromStdString(describe_request(snap.request));
  const std::int64_t batch = snap.request.settings.batch > 0
                                 ? snap.request.settings.batch
                                 : (snap.model ? snap.model->scenario.batch : 0);
  if (batch > 0) name += QCoreApplication::translate("Pins", ", batch %1").arg(batch);
  if (snap.dryRun()) name += QCoreApplication::translate("Pins", " (dry run)");
  if (snap.result && !snap.result->ok) name += QCoreApplication::translate("Pins", " (failed)");
  return name;
}

// Distinct from the category fills and the grey ghost, and from each other in both themes.
const std::vector<QColor>& PinList::palette() {
  static const std::vector<QColor> colours = {QColor(0xd6, 0x27, 0x28), QColor(0x1f, 0x77, 0xb4),
                                              QColor(0x2c, 0xa0, 0x2c), QColor(0xff, 0x7f, 0x0e),
                                              QColor(0x94, 0x67, 0xbd), QColor(0x17, 0xbe, 0xcf),
                                              QColor(0xe3, 0x77, 0xc2), QColor(0x8c, 0x56, 0x4b)};
  return colours;
}

const Pin* PinList::find(quint64 id) const {
  for (const Pin& p : pins_)
    if (p.id == id) return &p;
  return nullptr;
}

Pin* PinList::findMutable(quint64 id) {
  for (Pin& p : pins_)
    if (p.id == id) return &p;
  return nullptr;
}

const Pin* PinList::findRequest(const RunRequest& request) const {
  for (const Pin& p : pins_)
    if (same_run(p.request, request)) return &p;
  return nullptr;
}

// Beyond the palette's size colours repeat, least used first, so two pins share one only when
// every colour is taken.
QColor PinList::nextColour() const {
  const auto& colours = palette();
  std::size_t best = 0, bestUses = SIZE_MAX;
  for (std::size_t i = 0; i < colours.size(); ++i) {
    const auto uses = static_cast<std::size_t>(std::count_if(
        pins_.begin(), pins_.end(), [&](const Pin& p) { return p.colour == colours[i]; }));
    if (uses < bestUses) {
      best = i;
      bestUses = uses;
    }
  }
  return colours[best];
}

quint64 PinList::add(const RunSnapshot& snapshot, const QString& name) {
  Pin p;
  p.id = nextId_++;
  p.name = name;
  p.colour = nextColour();
  p.request = snapshot.request;
  p.series = snapshot.series;
  p.summary = snapshot.summary;
  p.figures = pinFigures(snapshot.summary);
  pins_.push_back(std::move(p));
  emit changed();
  return pins_.back().id;
}

bool PinList::remove(quint64 id) {
  const auto n = std::erase_if(pins_, [id](const Pin& p) { return p.id == id; });
  if (n > 0) emit changed();
  return n > 0;
}

bool PinList::setVisible(quint64 id, bool visible) {
  Pin* p = findMutable(id);
  if (!p || p->visible == visible) return false;
  p->visible = visible;
  emit changed();
  return true;
}

bool PinList::rename(quint64 id, const QString& name) {
  Pin* p = findMutable(id);
  if (!p || p->name == name || name.trimmed().isEmpty()) return false;
  p->name = name.trimmed();
  emit changed();
  return true;
}

void PinList::clear() {
  if (pins_.empty()) return;
  pins_.clear();
  emit changed();
}

QByteArray savedPinsJson(const std::vector<Pin>& pins) {
  QJsonArray out;
  for (const Pin& p : pins) {
    QJsonArray modules, ranges;
    for (const std::string& m : p.request.plan.modules) modules.append(QString::fromStdString(m));
    for (const auto& [first, last] : p.request.plan.ranges)
      ranges.append(QJsonArray{QString::fromStdString(first), QString::fromStdString(last)});
    // A planner's plan gives some regions a policy of their own (or none): {"h.0": "none"}.
    QJsonObject policies;
    for (const auto& [region, own] : p.request.plan.policies)
      policies.insert(QString::fromStdString(region), QString::fromStdString(own.spelling()));
    out.append(QJsonObject{
        {QStringLiteral("name"), p.name},
        {QStringLiteral("visible"), p.visible},
        {QStringLiteral("modules"), modules},
        {QStringLiteral("ranges"), ranges},
        {QStringLiteral("segments"), p.request.plan.segments},
        {QStringLiteral("reentrant"), p.request.settings.use_reentrant},
        {QStringLiteral("preserve_rng"), p.request.settings.preserve_rng_state},
        {QStringLiteral("policy"), QString::fromStdString(p.request.plan.policy.spelling())},
        {QStringLiteral("policies"), policies},
        {QStringLiteral("batch"), static_cast<qint64>(p.request.settings.batch)},
    });
  }
  return QJsonDocument(out).toJson(QJsonDocument::Compact);
}

std::vector<SavedPin> savedPinsFromJson(const QByteArray& json, const RunRequest& base) {
  std::vector<SavedPin> out;
  for (const QJsonValue& v : QJsonDocument::fromJson(json).array()) {
    const QJsonObject o = v.toObject();
    const qint64 batch = o.value(QStringLiteral("batch")).toInteger(-1);
    const int segments = o.value(QStringLiteral("segments")).toInt(-1);
    if (o.isEmpty() || batch < 0 || batch > (qint64{1} << 40) || segments < 0) continue;
    SavedPin p;
    p.request = base;
    p.request.plan.modules.clear();
    p.request.plan.ranges.clear();
    p.name = o.value(QStringLiteral("name")).toString().left(200);
    p.visible = o.value(QStringLiteral("visible")).toBool(true);
    for (const QJsonValue& m : o.value(QStringLiteral("modules")).toArray())
      p.request.plan.modules.insert(m.toString().toStdString());
    for (const QJsonValue& r : o.value(QStringLiteral("ranges")).toArray()) {
      const QJsonArray pair = r.toArray();
      if (pair.size() == 2)
        p.request.plan.ranges.emplace_back(pair[0].toString().toStdString(),
                                           pair[1].toString().toStdString());
    }
    p.request.plan.segments = segments;
    p.request.settings.use_reentrant =
        o.value(QStringLiteral("reentrant")).toBool(base.settings.use_reentrant);
    p.request.settings.preserve_rng_state =
        o.value(QStringLiteral("preserve_rng")).toBool(base.settings.preserve_rng_state);
    // "policy" (a spelling); pins saved before per-op policies said "save_matmul": true.
    try {
      p.request.plan.policy =
          o.contains(QStringLiteral("policy"))
              ? SelectivePolicy::parse(o.value(QStringLiteral("policy")).toString().toStdString())
          : o.value(QStringLiteral("save_matmul")).toBool(false) ? SelectivePolicy::save_matmul()
                                                                 : SelectivePolicy{};
      p.request.plan.policies.clear();
      const QJsonObject policies = o.value(QStringLiteral("policies")).toObject();
      for (auto it = policies.begin(); it != policies.end(); ++it)
        p.request.plan.policies[it.key().toStdString()] =
            SelectivePolicy::parse(it.value().toString().toStdString());
    } catch (const std::invalid_argument&) {
      continue;  // a pin from elsewhere naming a policy this build does not know
    }
    p.request.settings.batch = batch;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ckpt::ui
