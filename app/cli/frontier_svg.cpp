#include "frontier_svg.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ckpt::cli {

const char* strategy_colour(Strategy s) {
  switch (s) {
    case Strategy::none:
      return "#7f7f7f";
    case Strategy::all:
      return "#d62728";
    case Strategy::every_k:
      return "#ff7f0e";
    case Strategy::sqrt:
      return "#8c564b";
    case Strategy::uniform:
      return "#e377c2";
    case Strategy::greedy:
      return "#2ca02c";
    case Strategy::knapsack:
      return "#9467bd";
    case Strategy::optimal:
      return "#1f77b4";
  }
  return "#000000";
}

namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

}  // namespace

void write_frontier_svg(const std::string& path, const std::string& title,
                        const std::vector<PlanPoint>& points, const std::vector<PlanPoint>& front,
                        std::int64_t budget, const PlanPoint& chosen) {
  const double W = 900, H = 560, L = 90, R = 180, T = 50, B = 60;
  double x0 = 0, x1 = 1e-9, y0 = 1e300, y1 = 0;
  for (const auto& p : points) {
    if (!p.eval.ok) continue;
    x1 = std::max(x1, p.eval.recompute_ms());
    y0 = std::min(y0, static_cast<double>(p.eval.peak_bytes));
    y1 = std::max(y1, static_cast<double>(p.eval.peak_bytes));
  }
  y0 = std::min(y0, static_cast<double>(budget));
  y1 = std::max(y1, static_cast<double>(budget));
  if (y1 <= y0) y1 = y0 + 1;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  x1 *= 1.05;
  auto sx = [&](double v) { return L + (v - x0) / (x1 - x0) * (W - L - R); };
  auto sy = [&](double v) { return H - B - (v - y0) / (y1 - y0) * (H - T - B); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << L << "\" y=\"28\" font-size=\"16\">" << escape(title)
    << ": peak memory against recompute time</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"black\"/><line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\""
    << H - B << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    s << "<text x=\"" << sx(xv) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">"
      << static_cast<int>(xv * 100) / 100.0 << "</text>\n"
      << "<text x=\"" << L - 6 << "\" y=\"" << sy(yv) + 4 << "\" text-anchor=\"end\">"
      << static_cast<int>(yv / (1 << 20) * 100) / 100.0 << "</text>\n";
  }
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 15
    << "\" text-anchor=\"middle\">recompute (ms, forward times measured per op)</text>\n"
    << "<text x=\"20\" y=\"" << (T + H - B) / 2 << "\" transform=\"rotate(-90 20 "
    << (T + H - B) / 2 << ")\" text-anchor=\"middle\">peak (MiB)</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << sy(static_cast<double>(budget)) << "\" x2=\"" << W - R
    << "\" y2=\"" << sy(static_cast<double>(budget))
    << "\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/><text x=\"" << W - R - 4 << "\" y=\""
    << sy(static_cast<double>(budget)) - 5
    << "\" text-anchor=\"end\" fill=\"#d62728\">budget</text>\n";
  s << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
  for (const auto& p : front)
    s << sx(p.eval.recompute_ms()) << "," << sy(static_cast<double>(p.eval.peak_bytes)) << " ";
  s << "\"/>\n";
  for (const auto& p : points)
    if (p.eval.ok)
      s << "<circle cx=\"" << sx(p.eval.recompute_ms()) << "\" cy=\""
        << sy(static_cast<double>(p.eval.peak_bytes)) << "\" r=\"5\" fill=\""
        << strategy_colour(p.strategy) << "\" fill-opacity=\"0.8\"><title>"
        << escape(std::string(strategy_name(p.strategy)) + " " + p.detail + ": " + plan_text(p))
        << "</title></circle>\n";
  s << "<circle cx=\"" << sx(chosen.eval.recompute_ms()) << "\" cy=\""
    << sy(static_cast<double>(chosen.eval.peak_bytes))
    << "\" r=\"9\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n";
  double ly = T + 10;
  for (Strategy st : kStrategies) {
    s << "<circle cx=\"" << W - R + 20 << "\" cy=\"" << ly << "\" r=\"5\" fill=\""
      << strategy_colour(st) << "\"/><text x=\"" << W - R + 32 << "\" y=\"" << ly + 4 << "\">"
      << strategy_name(st) << "</text>\n";
    ly += 20;
  }
  s << "<circle cx=\"" << W - R + 20 << "\" cy=\"" << ly << "\" r=\"8\" fill=\"none\" "
    << "stroke=\"black\" stroke-width=\"2\"/><text x=\"" << W - R + 32 << "\" y=\"" << ly + 4
    << "\">the plan</text>\n</svg>\n";
  std::ofstream f(path);
  f << s.str();
  if (!f) throw std::runtime_error("--plot: cannot write " + path);
}

}  // namespace ckpt::cli
