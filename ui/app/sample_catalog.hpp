#pragma once

// The samples bundled in the resources (every samples/*.json and *.onnx of the source tree,
// compiled in at build time), and which one the app opens when given no file.

#include <QString>
#include <QStringList>

namespace ckpt::ui {

struct SampleEntry {
  QString path;   // ":/samples/densenet_block.json"
  QString title;  // from the sample's "title" when it has one, else its file name
};

QList<SampleEntry> bundledSamples();
// The embedded default sample, or an empty string when none is bundled.
QString defaultSamplePath();

}  // namespace ckpt::ui
