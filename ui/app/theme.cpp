#include "ui/app/theme.hpp"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <optional>

namespace ckpt::ui {

namespace {

QPalette darkPalette() {
  QPalette p;
  const QColor window(0x23, 0x27, 0x2e), base(0x1b, 0x1e, 0x24), text(0xe6, 0xe8, 0xec);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, window);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0xa3, 0xb2));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x7a, 0xa7, 0xf0));
  p.setColor(QPalette::Highlight, QColor(0x4f, 0x7f, 0xd1));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x70, 0x76, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x70, 0x76, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x70, 0x76, 0x80));
  return p;
}

std::optional<QPalette>& platformPalette() {
  static std::optional<QPalette> p;
  return p;
}

}  // namespace

QString themeName(ThemeMode mode) {
  switch (mode) {
    case ThemeMode::light:
      return QStringLiteral("light");
    case ThemeMode::dark:
      return QStringLiteral("dark");
    case ThemeMode::system:
      break;
  }
  return QStringLiteral("system");
}

ThemeMode themeFromName(const QString& name) {
  if (name == QLatin1String("light")) return ThemeMode::light;
  if (name == QLatin1String("dark")) return ThemeMode::dark;
  return ThemeMode::system;
}

void applyTheme(ThemeMode mode) {
  if (!platformPalette()) platformPalette() = QApplication::palette();
  switch (mode) {
    case ThemeMode::system:
      QApplication::setPalette(*platformPalette());
      break;
    case ThemeMode::light:
      QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
      QApplication::setPalette(QApplication::style()->standardPalette());
      break;
    case ThemeMode::dark:
      QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
      QApplication::setPalette(darkPalette());
      break;
  }
}

}  // namespace ckpt::ui
