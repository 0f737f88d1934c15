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

namespace {

// The plot's geometry: the page, its margins, and the data ranges mapped into it.
struct Frame {
  static constexpr double W = 900, H = 560, L = 90, R = 180, T = 50, B = 60;
  double x0 = 0, x1 = 1e-9, y0 = 1e300, y1 = 0;
  double sx(double v) const { return L + (v - x0) / (x1 - x0) * (W - L - R); }
  double sy(double v) const { return H - B - (v - y0) / (y1 - y0) * (H - T - B); }
};

// Every point that ran and the budget line, with a margin.
Frame frame_of(const std::vector<PlanPoint>& points, std::int64_t budget) {
  Frame f;
  for (const auto& p : points) {
    if (!p.eval.ok) continue;
    f.x1 = std::max(f.x1, p.eval.cost_ms());
    f.y0 = std::min(f.y0, static_cast<double>(p.eval.peak_bytes));
    f.y1 = std::max(f.y1, static_cast<double>(p.eval.peak_bytes));
  }
  f.y0 = std::min(f.y0, static_cast<double>(budget));
  f.y1 = std::max(f.y1, static_cast<double>(budget));
  if (f.y1 <= f.y0) f.y1 = f.y0 + 1;
  const double pad = (f.y1 - f.y0) * 0.05;
  f.y0 -= pad;
  f.y1 += pad;
  f.x1 *= 1.05;
  return f;
}

void write_axes(std::ostream& s, const Frame& f, const std::string& title, std::int64_t budget) {
  constexpr double W = Frame::W, H = Frame::H, L = Frame::L, R = Frame::R, T = Frame::T,
                   B = Frame::B;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << L << "\" y=\"28\" font-size=\"16\">" << escape(title)
    << ": peak memory against recompute and copy time</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"black\"/><line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\""
    << H - B << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double xv = f.x0 + (f.x1 - f.x0) * i / 4, yv = f.y0 + (f.y1 - f.y0) * i / 4;
    s << "<text x=\"" << f.sx(xv) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">"
      << static_cast<int>(xv * 100) / 100.0 << "</text>\n"
      << "<text x=\"" << L - 6 << "\" y=\"" << f.sy(yv) + 4 << "\" text-anchor=\"end\">"
      << static_cast<int>(yv / (1 << 20) * 100) / 100.0 << "</text>\n";
  }
  const double by = f.sy(static_cast<double>(budget));
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 15
    << "\" text-anchor=\"middle\">recompute + offload copies (ms, as the plan report times "
       "them)</text>\n"
    << "<text x=\"20\" y=\"" << (T + H - B) / 2 << "\" transform=\"rotate(-90 20 "
    << (T + H - B) / 2 << ")\" text-anchor=\"middle\">peak (MiB)</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << by << "\" x2=\"" << W - R << "\" y2=\"" << by
    << "\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/><text x=\"" << W - R - 4 << "\" y=\""
    << by - 5 << "\" text-anchor=\"end\" fill=\"#d62728\">budget</text>\n";
}

void write_points(std::ostream& s, const Frame& f, const std::vector<PlanPoint>& points,
                  const std::vector<PlanPoint>& front, const PlanPoint& chosen) {
  s << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
  for (const auto& p : front)
    s << f.sx(p.eval.cost_ms()) << "," << f.sy(static_cast<double>(p.eval.peak_bytes)) << " ";
  s << "\"/>\n";
  for (const auto& p : points)
    if (p.eval.ok)
      s << "<circle cx=\"" << f.sx(p.eval.cost_ms()) << "\" cy=\""
        << f.sy(static_cast<double>(p.eval.peak_bytes)) << "\" r=\"5\" fill=\""
        << strategy_colour(p.strategy) << "\" fill-opacity=\"0.8\"><title>"
        << escape(std::string(strategy_name(p.strategy)) + " " + p.detail + ": " + plan_text(p))
        << "</title></circle>\n";
  s << "<circle cx=\"" << f.sx(chosen.eval.cost_ms()) << "\" cy=\""
    << f.sy(static_cast<double>(chosen.eval.peak_bytes))
    << "\" r=\"9\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n";
}

void write_legend(std::ostream& s) {
  constexpr double W = Frame::W, R = Frame::R;
  double ly = Frame::T + 10;
  for (Strategy st : kStrategies) {
    s << "<circle cx=\"" << W - R + 20 << "\" cy=\"" << ly << "\" r=\"5\" fill=\""
      << strategy_colour(st) << "\"/><text x=\"" << W - R + 32 << "\" y=\"" << ly + 4 << "\">"
      << strategy_name(st) << "</text>\n";
    ly += 20;
  }
  s << "<circle cx=\"" << W - R + 20 << "\" cy=\"" << ly << "\" r=\"8\" fill=\"none\" "
    << "stroke=\"black\" stroke-width=\"2\"/><text x=\"" << W - R + 32 << "\" y=\"" << ly + 4
    << "\">the plan</text>\n</svg>\n";
}

}  // namespace

void write_frontier_svg(const std::string& path, const std::string& title,
                        const std::vector<PlanPoint>& points, const std::vector<PlanPoint>& front,
                        std::int64_t budget, const PlanPoint& chosen) {
  const Frame frame = frame_of(points, budget);
  std::ostringstream s;
  write_axes(s, frame, title, budget);
  write_points(s, frame, points, front, chosen);
  write_legend(s);
  std::ofstream f(path);
  f << s.str();
  if (!f) throw std::runtime_error("--plot: cannot write " + path);
}

}  // namespace ckpt::cli
