#include "ui/tours/tour.hpp"

#include "engine/report/figures.hpp"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <cmath>
#include <stdexcept>

#include "ui/core/memory_series.hpp"
#include "ui/session/run_controller.hpp"

namespace ckpt::ui {

namespace {

[[noreturn]] void fail(const QString& source, const QString& where, const QString& what) {
  throw std::runtime_error(QStringLiteral("%1: %2: %3").arg(source, where, what).toStdString());
}

const QStringList& cursorNames() {
  static const QStringList names{QString(),
                                 QStringLiteral("start"),
                                 QStringLiteral("end"),
                                 QStringLiteral("peak"),
                                 QStringLiteral("first-recompute"),
                                 QStringLiteral("end-of-forward")};
  return names;
}

// One step's JSON object, read field by field; every error names the file and the step.
struct StepFields {
  const QJsonObject& o;
  const QString& source;
  const QString& where;

  [[noreturn]] void fail(const QString& what) const { ckpt::ui::fail(source, where, what); }

  void checkKeys() const {
    static const QStringList known{
        QStringLiteral("caption"),   QStringLiteral("sample"),       QStringLiteral("modules"),
        QStringLiteral("reentrant"), QStringLiteral("preserve_rng"), QStringLiteral("policy"),
        QStringLiteral("cursor"),    QStringLiteral("highlight"),    QStringLiteral("segments"),
        QStringLiteral("batch"),     QStringLiteral("device")};
    for (const QString& key : o.keys())
      if (!known.contains(key)) fail(QStringLiteral("unknown field '%1'").arg(key));
  }

  std::optional<std::set<std::string>> modules() const {
    if (!o.contains(QStringLiteral("modules"))) return std::nullopt;
    const QJsonValue v = o.value(QStringLiteral("modules"));
    if (!v.isArray()) fail(QStringLiteral("'modules' is not a list of names"));
    std::set<std::string> names;
    for (const QJsonValue& m : v.toArray()) {
      if (!m.isString()) fail(QStringLiteral("'modules' holds a non-string"));
      names.insert(m.toString().toStdString());
    }
    return names;
  }

  void flag(const char* key, std::optional<bool>& into) const {
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isUndefined()) return;
    if (!v.isBool()) fail(QStringLiteral("'%1' is not true or false").arg(key));
    into = v.toBool();
  }

  // A field that names one of a few values: "device": "cuda".
  template <typename T>
  void named(const char* key, std::initializer_list<std::pair<const char*, T>> values,
             std::optional<T>& into) const {
    if (!o.contains(QLatin1String(key))) return;
    const QString v = o.value(QLatin1String(key)).toString();
    QStringList names;
    for (const auto& [name, value] : values) {
      if (v == QLatin1String(name)) {
        into = value;
        return;
      }
      names << QLatin1String(name);
    }
    fail(QStringLiteral("%1 '%2' (%3)").arg(key, v, names.join(QStringLiteral(" or "))));
  }

  // "policy": "save:mm/2", spelled as --policy is.
  void policy(std::optional<SelectivePolicy>& into) const {
    if (!o.contains(QStringLiteral("policy"))) return;
    const QString p = o.value(QStringLiteral("policy")).toString();
    try {
      into = SelectivePolicy::parse(p.toStdString());
    } catch (const std::invalid_argument& e) {
      fail(QString::fromStdString(e.what()));
    }
  }

  std::optional<std::int64_t> count(const char* key, std::int64_t most) const {
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isUndefined()) return std::nullopt;
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d < 0 || d > static_cast<double>(most) || d != std::floor(d))
      fail(QStringLiteral("'%1' is not a whole number from 0 to %2").arg(key).arg(most));
    return static_cast<std::int64_t>(d);
  }

  QString cursor() const {
    const QString c = o.value(QStringLiteral("cursor")).toString();
    if (!cursorNames().contains(c))
      fail(QStringLiteral("cursor '%1' (one of: %2)")
               .arg(c, cursorNames().mid(1).join(QStringLiteral(", "))));
    return c;
  }

  QString caption() const {
    const QString c = o.value(QStringLiteral("caption")).toString();
    if (c.trimmed().isEmpty()) fail(QStringLiteral("no caption"));
    static const QRegularExpression placeholder(QStringLiteral("\\{([a-z_]+)\\}"));
    for (auto it = placeholder.globalMatch(c); it.hasNext();) {
      const QString name = it.next().captured(1);
      if (!tourPlaceholders().contains(name))
        fail(QStringLiteral("unknown placeholder {%1}").arg(name));
    }
    return c;
  }
};

// One step: what it states overrides `previous`; the rest is inherited.
TourStep parseStep(const QJsonObject& o, const TourStep& previous, const QString& source,
                   const QString& where) {
  const StepFields f{o, source, where};
  f.checkKeys();
  TourStep s = previous;
  s.caption = f.caption();
  if (o.contains(QStringLiteral("sample"))) {
    // A new sample starts from its own settings, unless the step states them.
    s = TourStep{};
    s.caption = f.caption();
    s.sample = o.value(QStringLiteral("sample")).toString();
    s.modules = std::set<std::string>{};
    s.policy = SelectivePolicy{};
  }
  if (s.sample.isEmpty()) f.fail(QStringLiteral("no sample (the first step names one)"));
  if (auto m = f.modules()) s.modules = std::move(*m);
  f.flag("reentrant", s.reentrant);
  f.flag("preserve_rng", s.preserveRng);
  f.policy(s.policy);
  f.named<Device>("device", {{"cpu", Device::cpu}, {"cuda", Device::cuda}}, s.device);
  if (const auto n = f.count("segments", 1 << 20)) s.segments = static_cast<int>(*n);
  if (const auto n = f.count("batch", 1 << 24)) s.batch = *n;
  s.cursor = f.cursor();
  s.highlight = o.value(QStringLiteral("highlight")).toString();
  return s;
}

QString bytes(std::int64_t b) {
  return QString::fromStdString(formatBytes(b));
}

}  // namespace

QList<Tour> parseTours(const QByteArray& json, const QString& source) {
  QJsonParseError error{};
  const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
  if (doc.isNull())
    fail(source, QStringLiteral("offset %1").arg(error.offset), error.errorString());
  const QJsonObject root = doc.object();
  if (root.value(QStringLiteral("format")).toString() != QStringLiteral("checkpoint-lab-tours"))
    fail(source, QStringLiteral("format"), QStringLiteral("not a checkpoint-lab-tours file"));
  QList<Tour> tours;
  for (const QJsonValue& v : root.value(QStringLiteral("tours")).toArray()) {
    const QJsonObject o = v.toObject();
    Tour tour;
    tour.id = o.value(QStringLiteral("id")).toString();
    tour.title = o.value(QStringLiteral("title")).toString();
    tour.question = o.value(QStringLiteral("question")).toString();
    const QString where = QStringLiteral("lesson '%1'").arg(tour.id);
    if (tour.id.isEmpty() || tour.title.isEmpty())
      fail(source, where, QStringLiteral("a lesson needs an id and a title"));
    TourStep previous;
    const QJsonArray steps = o.value(QStringLiteral("steps")).toArray();
    for (int k = 0; k < steps.size(); ++k) {
      previous = parseStep(steps[k].toObject(), previous, source,
                           QStringLiteral("%1, step %2").arg(where).arg(k + 1));
      tour.steps.append(previous);
    }
    if (tour.steps.isEmpty()) fail(source, where, QStringLiteral("no steps"));
    tours.append(tour);
  }
  if (tours.isEmpty()) fail(source, QStringLiteral("tours"), QStringLiteral("no lesson"));
  return tours;
}

const QList<Tour>& bundledTours() {
  static const QList<Tour> tours = [] {
    QFile f(QStringLiteral(":/tours.json"));
    if (!f.open(QIODevice::ReadOnly)) return QList<Tour>{};
    return parseTours(f.readAll(), QStringLiteral("tours.json"));
  }();
  return tours;
}

QStringList tourPlaceholders() {
  return {QStringLiteral("peak"),
          QStringLiteral("baseline_peak"),
          QStringLiteral("peak_change"),
          QStringLiteral("recompute"),
          QStringLiteral("forward"),
          QStringLiteral("backward"),
          QStringLiteral("checkpoint_inputs"),
          QStringLiteral("rng"),
          QStringLiteral("saved"),
          QStringLiteral("status"),
          QStringLiteral("messages"),
          QStringLiteral("peak_at"),
          QStringLiteral("workspace"),
          QStringLiteral("reserved"),
          QStringLiteral("reserved_gap"),
          QStringLiteral("gpu_total"),
          QStringLiteral("cuda_context"),
          QStringLiteral("memory_of")};
}

QString fillCaption(const QString& caption, const RunSnapshot& run) {
  const RunSummary& s = run.summary;
  const auto at_end = [&](MemoryCategory c) {
    return bytes(s.end_of_forward[static_cast<std::size_t>(c)]);
  };
  const std::optional<AgainstPlain> plain = s.ok ? against_plain(s) : std::nullopt;
  QString change = QStringLiteral("—");
  if (plain && s.baseline->peak_bytes > 0) {
    const PeakChange& c = plain->peak;
    change = c.bytes < 0
                 ? QStringLiteral("%1 less (%2 %)").arg(bytes(-c.bytes)).arg(c.percent, 0, 'f', 1)
             : c.ratio >= 10
                 ? QStringLiteral("%1 more (×%2)").arg(bytes(c.bytes)).arg(c.ratio, 0, 'f', 0)
             : c.bytes > 0
                 ? QStringLiteral("%1 more (+%2 %)").arg(bytes(c.bytes)).arg(c.percent, 0, 'f', 1)
                 : QStringLiteral("no change");
  }
  QStringList messages;
  for (const TraceMessage& m : s.messages)
    messages << QString::fromStdString(m.text).toHtmlEscaped();
  messages.removeDuplicates();
  const QString status = s.ok ? QStringLiteral("the run succeeded")
                              : QStringLiteral("the run failed: %1")
                                    .arg(QString::fromStdString(s.error).toHtmlEscaped());
  const QList<std::pair<QString, QString>> values{
      {QStringLiteral("peak"), bytes(s.peak.bytes)},
      {QStringLiteral("baseline_peak"),
       s.baseline ? bytes(s.baseline->peak_bytes) : QStringLiteral("—")},
      {QStringLiteral("peak_change"), change},
      {QStringLiteral("recompute"), QString::number(s.executions.recompute)},
      {QStringLiteral("forward"), QString::number(s.executions.forward)},
      {QStringLiteral("backward"), QString::number(s.executions.backward)},
      {QStringLiteral("checkpoint_inputs"), at_end(MemoryCategory::checkpoint_input)},
      {QStringLiteral("rng"), at_end(MemoryCategory::rng_state)},
      {QStringLiteral("saved"), bytes(saved_for_backward(s.end_of_forward))},
      {QStringLiteral("status"), status},
      {QStringLiteral("messages"),
       messages.isEmpty() ? QStringLiteral("none") : messages.join(QStringLiteral("<br>"))},
      {QStringLiteral("peak_at"),
       QStringLiteral("%1 (%2)").arg(QString::fromStdString(s.peak_op),
                                     QString::fromStdString(s.peak_node))},
      // A device with a caching allocator (cuda); "—" on the cpu, which has none.
      {QStringLiteral("workspace"),
       bytes(s.peak.by_category[static_cast<std::size_t>(MemoryCategory::workspace)])},
      {QStringLiteral("reserved"),
       s.reserved ? bytes(s.reserved->peak_bytes) : QStringLiteral("—")},
      {QStringLiteral("reserved_gap"),
       s.reserved ? bytes(s.reserved->fragmentation_at_peak) : QStringLiteral("—")},
      {QStringLiteral("gpu_total"), s.gpu ? bytes(s.gpu->total()) : QStringLiteral("—")},
      {QStringLiteral("cuda_context"), s.gpu ? bytes(s.gpu->context) : QStringLiteral("—")},
      {QStringLiteral("memory_of"), QString::fromStdString(s.memory_of).toHtmlEscaped()},
  };
  QString out = caption;
  for (const auto& [name, value] : values)
    out.replace(QLatin1Char('{') + name + QLatin1Char('}'), value);
  return out;
}

std::int64_t tourCursorStep(const QString& cursor, const RunSnapshot& run) {
  const Trace& trace = run.trace();
  const std::int64_t steps = trace.step_count();
  if (steps == 0 || cursor.isEmpty()) return -1;
  if (cursor == QStringLiteral("start")) return 0;
  if (cursor == QStringLiteral("end")) return steps - 1;
  if (cursor == QStringLiteral("peak")) return run.summary.peak.step;
  if (cursor == QStringLiteral("end-of-forward")) return trace.forward_end();
  if (cursor == QStringLiteral("first-recompute"))
    return trace.recomputes().empty() ? -1 : trace.recomputes().front().begin_step;
  return -1;
}

}  // namespace ckpt::ui
