#pragma once

// The thread pool for the app's long jobs (runs, loading, graph building, layout parsing).
// Not QThreadPool::globalInstance(): Qt's raster paint engine borrows global-pool threads for
// its fills and waits for them, so a 5-second run there freezes painting (measured: the UI
// thread blocked 550 ms in QRasterPaintEngine::drawLines while HeavyModel ran).

class QThreadPool;

namespace ckpt::ui {

QThreadPool* workPool();

}  // namespace ckpt::ui
