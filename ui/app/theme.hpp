#pragma once

// View > Theme: System follows the platform palette (Qt 6.4 has no colour-scheme query), Light
// and Dark set Fusion palettes. The graph and the plot take their colours from Palette, which
// follows whichever is in force.

#include <QString>

namespace ckpt::ui {

enum class ThemeMode { system, light, dark };

QString themeName(ThemeMode mode);
ThemeMode themeFromName(const QString& name);
// Applies `mode` to the QApplication (remembers the platform palette the first time).
void applyTheme(ThemeMode mode);

}  // namespace ckpt::ui
