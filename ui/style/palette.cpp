#include "ui/style/palette.hpp"

#include <QFile>
#include <QGuiApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPalette>

namespace ckpt::ui {

namespace {

const char* const kCategoryKeys[kMemoryCategoryCount] = {
    "parameter",        "input",      "activation", "temporary", "gradient",
    "checkpoint_input", "recomputed", "rng_state",  "workspace", "optimizer_state"};
const char* const kRankKeys[kFsdpCategoryCount] = {
    "sharded_parameters", "sharded_gradients",   "optimizer_state", "unsharded_parameters",
    "all_gather_buffers", "unsharded_gradients", "reduce_scatter",  "activations"};
const char* const kStateKeys[kActivationStateCount] = {"pending",          "kept",       "dropped",
                                                       "checkpoint_input", "recomputed", "freed"};

QJsonObject paletteJson() {
  static const QJsonObject root = [] {
    QFile f(QStringLiteral(":/palette.json"));
    if (!f.open(QIODevice::ReadOnly)) return QJsonObject();
    return QJsonDocument::fromJson(f.readAll()).object();
  }();
  return root;
}

QColor colour(const QJsonObject& o, const char* key, const char* fallback) {
  QColor c(o.value(QLatin1String(key)).toString());
  return c.isValid() ? c : QColor(QLatin1String(fallback));
}

// Falls back to the compiled-in light colours if the resource is missing or malformed, so a
// broken palette can never leave the plot invisible.
Palette load(const char* which, bool dark) {
  const QJsonObject o = paletteJson().value(QLatin1String(which)).toObject();
  Palette p;
  p.isDark = dark;
  p.background = colour(o, "background", dark ? "#1b1e24" : "#ffffff");
  p.surface = colour(o, "surface", dark ? "#23272e" : "#f6f7f9");
  p.text = colour(o, "text", dark ? "#e6e8ec" : "#1f2430");
  p.mutedText = colour(o, "mutedText", "#808080");
  p.grid = colour(o, "grid", dark ? "#323844" : "#e3e6eb");
  p.edge = colour(o, "edge", "#8a93a3");
  p.ghost = colour(o, "ghost", dark ? "#d9dde5" : "#3c4252");
  p.cursor = colour(o, "cursor", "#e0245e");
  p.recomputeShade = colour(o, "recomputeShade", "#b44fc9");
  p.checkpointMark = colour(o, "checkpointMark", "#e8710a");
  p.highlight = colour(o, "highlight", "#e0245e");
  p.forwardBand = colour(o, "forwardBand", dark ? "#1f2532" : "#f3f7ff");
  p.backwardBand = colour(o, "backwardBand", dark ? "#2a241f" : "#fff7f0");
  p.warning = colour(o, "warning", "#b7791f");
  p.error = colour(o, "error", "#c53030");
  const char* catFallback[kMemoryCategoryCount] = {"#b8c0cc", "#5fb8b0", "#4f7fd1", "#f2c14e",
                                                   "#6aa84f", "#f08a24", "#b44fc9", "#d9534f",
                                                   "#8d7b68", "#8a8f2e"};
  const QJsonObject cats = o.value(QLatin1String("categories")).toObject();
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
    p.categories[i] = colour(cats, kCategoryKeys[i], catFallback[i]);
  const char* stateFallback[kActivationStateCount] = {"#ffffff", "#4f7fd1", "#d5dae3",
                                                      "#f08a24", "#b44fc9", "#eef0f3"};
  const QJsonObject states = o.value(QLatin1String("states")).toObject();
  for (std::size_t i = 0; i < kActivationStateCount; ++i)
    p.states[i] = colour(states, kStateKeys[i], stateFallback[i]);
  const char* rankFallback[kFsdpCategoryCount] = {"#b8c0cc", "#6aa84f", "#8a8f2e", "#6f7f99",
                                                  "#4fb0b8", "#a9d48c", "#e07b91", "#4f7fd1"};
  const QJsonObject ranks = o.value(QLatin1String("ranks")).toObject();
  for (std::size_t i = 0; i < kFsdpCategoryCount; ++i)
    p.rankCategories[i] = colour(ranks, kRankKeys[i], rankFallback[i]);
  return p;
}

}  // namespace

QColor Palette::stateText(ActivationState s) const {
  const QColor bg = state(s);
  if (s == ActivationState::freed || s == ActivationState::dropped) return mutedText;
  return bg.lightnessF() > 0.6 ? QColor(0x1f, 0x24, 0x30) : QColor(Qt::white);
}

Palette Palette::light() {
  return load("light", false);
}
Palette Palette::dark() {
  return load("dark", true);
}

Palette Palette::forApplication() {
  const QColor window = QGuiApplication::palette().color(QPalette::Window);
  return window.lightnessF() < 0.5 ? dark() : light();
}

QString categoryLabel(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::parameter:
      return QObject::tr("parameters");
    case MemoryCategory::input:
      return QObject::tr("inputs");
    case MemoryCategory::activation:
      return QObject::tr("activations (saved)");
    case MemoryCategory::temporary:
      return QObject::tr("temporaries");
    case MemoryCategory::gradient:
      return QObject::tr("gradients");
    case MemoryCategory::checkpoint_input:
      return QObject::tr("checkpoint inputs");
    case MemoryCategory::recomputed:
      return QObject::tr("recomputed");
    case MemoryCategory::rng_state:
      return QObject::tr("RNG state");
    case MemoryCategory::workspace:
      return QObject::tr("workspace (cuBLAS)");
    case MemoryCategory::optimizer_state:
      return QObject::tr("optimizer state");
  }
  return {};
}

QString rankCategoryLabel(FsdpCategory c) {
  switch (c) {
    case FsdpCategory::sharded_parameters:
      return QObject::tr("sharded parameters");
    case FsdpCategory::sharded_gradients:
      return QObject::tr("sharded gradients");
    case FsdpCategory::optimizer_state:
      return QObject::tr("optimizer state (shards)");
    case FsdpCategory::unsharded_parameters:
      return QObject::tr("gathered parameters");
    case FsdpCategory::all_gather_buffers:
      return QObject::tr("all-gather buffers");
    case FsdpCategory::unsharded_gradients:
      return QObject::tr("unsharded gradients");
    case FsdpCategory::reduce_scatter:
      return QObject::tr("reduce-scatter buffers");
    case FsdpCategory::activations:
      return QObject::tr("activations and temporaries");
  }
  return {};
}

QString stateLabel(ActivationState s) {
  switch (s) {
    case ActivationState::pending:
      return QObject::tr("pending");
    case ActivationState::kept:
      return QObject::tr("kept");
    case ActivationState::dropped:
      return QObject::tr("dropped");
    case ActivationState::checkpoint_input:
      return QObject::tr("checkpoint input");
    case ActivationState::recomputed:
      return QObject::tr("recomputed");
    case ActivationState::freed:
      return QObject::tr("freed");
  }
  return {};
}

}  // namespace ckpt::ui
