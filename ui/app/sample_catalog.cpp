#include "ui/app/sample_catalog.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

namespace ckpt::ui {

namespace {

// The first of these that is bundled opens by default: the sample where one click shows the
// clearest change of the memory curve (see samples/README.md).
const char* const kDefaultCandidates[] = {"densenet_block.json", "resnet_blocks.json",
                                          "resnet.json", "mlp.json"};

QString titleOf(const QString& path) {
  if (path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)) {
    QFile f(path);
    if (f.open(QIODevice::ReadOnly)) {
      const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
      for (const char* key : {"title", "name"}) {
        const QString t = o.value(QLatin1String(key)).toString();
        if (!t.isEmpty()) return t;
      }
      const QString t =
          o.value(QLatin1String("scenario")).toObject().value(QLatin1String("title")).toString();
      if (!t.isEmpty()) return t;
    }
  }
  return QFileInfo(path).fileName();
}

}  // namespace

QList<SampleEntry> bundledSamples() {
  QList<SampleEntry> out;
  const QDir dir(QStringLiteral(":/samples"));
  for (const QString& name : dir.entryList({QStringLiteral("*.json"), QStringLiteral("*.onnx")},
                                           QDir::Files, QDir::Name)) {
    const QString path = dir.filePath(name);
    out.push_back({path, titleOf(path)});
  }
  return out;
}

QString defaultSamplePath() {
  for (const char* name : kDefaultCandidates) {
    const QString path = QStringLiteral(":/samples/") + QLatin1String(name);
    if (QFile::exists(path)) return path;
  }
  const auto all = bundledSamples();
  for (const auto& s : all)
    if (s.path.endsWith(QLatin1String(".json"))) return s.path;
  return all.isEmpty() ? QString() : all.front().path;
}

}  // namespace ckpt::ui
