#include "ui/plot/memory_plot_renderer.hpp"

// Apart from memory_plot_renderer.cpp so that code drawing plain series does not link the Trace.
namespace ckpt::ui {

bool exportMemoryPlot(const QString& path, const Trace& trace, const Trace* ghost, QSize size,
                      QString* error) {
  MemoryPlotModel model;
  model.series = std::make_shared<const MemorySeries>(memory_series_from_trace(trace));
  if (ghost) model.ghost = std::make_shared<const MemorySeries>(memory_series_from_trace(*ghost));
  const Trace* t = &trace;
  model.stepLabel = [t](std::int64_t k) {
    const TraceStep& s = t->step(k);
    return QString::fromStdString(s.node.empty() ? s.op : s.op + " · " + s.node);
  };
  return exportMemoryPlot(path, model, size, Palette::light(), error);
}

}  // namespace ckpt::ui
