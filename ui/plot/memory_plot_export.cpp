// exportMemoryPlot(): the renderer drawn headless into a PNG or an SVG file (the CLI's --plot).

#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>

#include "ui/plot/memory_plot_renderer.hpp"

namespace ckpt::ui {

bool exportMemoryPlot(const QString& path, const MemoryPlotModel& model, QSize size,
                      const Palette& palette, QString* error) {
  auto failWith = [&](const QString& message) {
    if (error) *error = message;
    return false;
  };
  if (!qobject_cast<QGuiApplication*>(QCoreApplication::instance()))
    return failWith(QObject::tr("%1: exporting a plot needs a QGuiApplication").arg(path));
  if (size.width() < 64 || size.height() < 64)
    return failWith(QObject::tr("%1: plot size %2x%3 is too small")
                        .arg(path)
                        .arg(size.width())
                        .arg(size.height()));
  MemoryPlotRenderer renderer;
  renderer.setPalette(palette);
  const QString suffix = QFileInfo(path).suffix().toLower();
  const QRectF rect(QPointF(0, 0), QSizeF(size));
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size);
    svg.setViewBox(rect);
    svg.setTitle(model.title.isEmpty() ? QStringLiteral("Memory") : model.title);
    svg.setDescription(QStringLiteral("Checkpoint Lab memory plot"));
    QPainter p;
    if (!p.begin(&svg)) return failWith(QObject::tr("%1: cannot write SVG").arg(path));
    renderer.render(p, rect, model);
    p.end();
  } else if (suffix == QLatin1String("png")) {
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    image.fill(palette.background);
    QPainter p(&image);
    renderer.render(p, rect, model);
    p.end();
    if (!image.save(path, "PNG")) return failWith(QObject::tr("%1: cannot write PNG").arg(path));
  } else {
    return failWith(
        QObject::tr("%1: unknown plot format '%2' (use .png or .svg)").arg(path, suffix));
  }
  QFileInfo written(path);
  if (!written.exists() || written.size() == 0)
    return failWith(QObject::tr("%1: nothing was written").arg(path));
  return true;
}

}  // namespace ckpt::ui
