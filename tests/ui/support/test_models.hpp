#pragma once

// Small native models for the GUI tests, written to a temporary directory; the bundled
// samples (samples/*) are tested as well when the build has them.

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include "ui/app/sample_catalog.hpp"

namespace ckpt::ui::test {

// An MLP with two checkpointable blocks.
inline const char* kBlocksJson = R"({
  "format": "checkpoint-lab-model", "version": 1,
  "name": "blocks", "seed": 7, "batch": 16,
  "inputs": [{"name": "x", "shape": ["batch", 64], "requires_grad": true}],
  "model": {"type": "sequential", "layers": [
    {"type": "linear", "name": "fc1", "in": 64, "out": 128},
    {"type": "relu", "name": "act1"},
    {"type": "sequential", "name": "block", "layers": [
      {"type": "linear", "name": "fc", "in": 128, "out": 128}, {"type": "gelu"},
      {"type": "linear", "name": "fc2", "in": 128, "out": 128}, {"type": "gelu"}]},
    {"type": "sequential", "name": "block2", "layers": [
      {"type": "linear", "name": "fc", "in": 128, "out": 128}, {"type": "gelu"},
      {"type": "linear", "name": "fc2", "in": 128, "out": 128}, {"type": "gelu"}]},
    {"type": "linear", "name": "head", "in": 128, "out": 2, "bias": false}
  ]},
  "notes": ["# Blocks", "Click *block*."]
})";

// HeavyModel's shape, smaller: a shared parameter added many times in repeated calls.
inline const char* kHeavyJson = R"({
  "name": "heavy", "seed": 1,
  "inputs": [{"name": "x", "shape": [], "requires_grad": true}],
  "model": {"type": "sequential", "parameters": {"a": {"shape": [], "init": 1.0}},
    "layers": [{"type": "repeat", "count": 40, "body":
      {"type": "function", "name": "heavy_function", "layers": [
        {"type": "repeat", "count": 10, "body": {"type": "add", "param": "a"}}]}}]}
})";

class ModelFiles {
 public:
  ModelFiles() {
    write(QStringLiteral("blocks.json"), kBlocksJson);
    write(QStringLiteral("heavy.json"), kHeavyJson);
  }
  QString path(const QString& name) const { return dir_.filePath(name); }
  // The hand-written models, then every bundled sample that can run for real here: not a
  // "dry_run_only" one (GPT-2 small's real run needs ~100 GiB; the tests compare real runs).
  QStringList all() const {
    QStringList out{path(QStringLiteral("blocks.json")), path(QStringLiteral("heavy.json"))};
    for (const auto& s : bundledSamples())
      if (!dryRunOnly(s.path)) out << s.path;
    return out;
  }
  static bool dryRunOnly(const QString& path) {
    QFile f(path);
    if (!path.endsWith(QLatin1String(".json")) || !f.open(QIODevice::ReadOnly)) return false;
    return QJsonDocument::fromJson(f.readAll())
        .object()
        .value(QLatin1String("dry_run_only"))
        .toBool();
  }

 private:
  void write(const QString& name, const char* text) {
    QFile f(dir_.filePath(name));
    if (f.open(QIODevice::WriteOnly)) f.write(text);
  }
  QTemporaryDir dir_;
};

}  // namespace ckpt::ui::test
