#include "traces/svg/SvgPlot.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "traces/report/JsonText.hpp"

namespace placesim {

namespace {

constexpr double kLeft = 80, kRight = 24, kTop = 40, kBottom = 56;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string fixed2(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
  return ec == std::errc() ? std::string(buf, end) : "0";
}

std::string tick_label(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 4);
  return ec == std::errc() ? std::string(buf, end) : "?";
}

std::string escape(const std::string& text) {
  std::string out;
  append_xml_escaped(out, text);
  return out;
}

/// A data interval mapped onto pixels, with its ticks.
struct Axis {
  double low = 0, high = 1;
  bool log = false;
  std::vector<double> ticks;
  double unit(double v) const {  // 0 at low, 1 at high
    return log ? (std::log10(v) - std::log10(low)) / (std::log10(high) - std::log10(low)) : (v - low) / (high - low);
  }
};

Axis linear_axis(double low, double high) {
  if (!(high > low)) {  // one value (or none): centre it in a unit-wide window
    double half = low == 0 || !std::isfinite(low) ? 1 : std::fabs(low) * 0.5;
    if (!std::isfinite(low)) low = 0;
    return linear_axis(low - half, low + half);
  }
  double raw = (high - low) / 5, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * (raw <= magnitude ? 1 : raw <= 2 * magnitude ? 2 : raw <= 5 * magnitude ? 5 : 10);
  Axis a{std::floor(low / step) * step, std::ceil(high / step) * step, false, {}};
  if (!std::isfinite(a.high - a.low) || !(step > 0)) return Axis{low, high, false, {low, high}};  // near overflow
  const long count = std::lround((a.high - a.low) / step);  // at most 7: step >= span / 5
  for (long i = 0; i <= count; ++i) {
    double t = a.low + static_cast<double>(i) * step;
    a.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  }
  return a;
}

// Index i names the 1-2-5 value m 10^e with e = floor(i / 3) and m = 1, 2, 5 for i - 3e = 0, 1, 2.
int decade_of(int index) {
  return index >= 0 ? index / 3 : -((-index + 2) / 3);
}
double one_two_five(int index) {
  int e = decade_of(index), m = index - 3 * e;
  return std::pow(10.0, e) * (m == 0 ? 1 : m == 1 ? 2 : 5);
}

// The 1-2-5 values nearest outside [low, high] bound a log axis; spans of up to three decades are ticked at every
// 1-2-5 value, longer ones at decades, about eight of them.
Axis log_axis(double low, double high) {
  auto at_or_below = [](double v) {
    int index = 3 * static_cast<int>(std::floor(std::log10(v))) + 2;
    while (one_two_five(index) > v * (1 + 1e-12)) --index;  // the tolerance keeps 10^e itself despite rounding
    return index;
  };
  int first = at_or_below(low), last = at_or_below(high);
  if (one_two_five(last) < high || last == first) ++last;
  Axis a{one_two_five(first), one_two_five(last), true, {}};
  int span = decade_of(last) - decade_of(first);
  int every = span <= 3 ? 1 : 3 * std::max(1, (span + 7) / 8);
  int start = every == 1 ? first : 3 * (decade_of(first) + (first % 3 != 0));
  for (int i = start; i <= last; i += every) a.ticks.push_back(one_two_five(i));
  return a;
}

// On a log axis values below 1e-300 are left out too: their decade would underflow to 0.
bool usable(double x, double y, bool log_x, bool log_y) {
  return std::isfinite(x) && std::isfinite(y) && (!log_x || x >= 1e-300) && (!log_y || y >= 1e-300);
}

std::pair<Axis, Axis> make_axes(const std::vector<PlotSeries>& series, bool log_x, bool log_y) {
  double x_low = INFINITY, x_high = -INFINITY, y_low = INFINITY, y_high = -INFINITY;
  for (const PlotSeries& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], s.y[i], log_x, log_y)) continue;
      x_low = std::min(x_low, s.x[i]);
      x_high = std::max(x_high, s.x[i]);
      y_low = std::min(y_low, s.y[i]);
      y_high = std::max(y_high, s.y[i]);
    }
  }
  if (x_low > x_high) x_low = x_high = log_x ? 1 : 0;
  if (y_low > y_high) y_low = y_high = log_y ? 1 : 0;
  return {log_x ? log_axis(x_low, x_high) : linear_axis(x_low, x_high),
          log_y ? log_axis(y_low, y_high) : linear_axis(y_low, y_high)};
}

/// Pixel geometry of the plotting area.
struct Frame {
  double left, top, width, height;
  double px(const Axis& a, double v) const { return left + a.unit(v) * width; }
  double py(const Axis& a, double v) const { return top + (1 - a.unit(v)) * height; }
};

void draw_axes(std::ostream& out, const Frame& f, const Axis& x, const Axis& y, const PlotOptions& o) {
  out << "<rect x=\"" << fixed2(f.left) << "\" y=\"" << fixed2(f.top) << "\" width=\"" << fixed2(f.width)
      << "\" height=\"" << fixed2(f.height) << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double t : x.ticks) {
    std::string px = fixed2(f.px(x, t));
    out << "<line x1=\"" << px << "\" y1=\"" << fixed2(f.top) << "\" x2=\"" << px << "\" y2=\""
        << fixed2(f.top + f.height) << "\" stroke=\"#ddd\"/>\n<text x=\"" << px << "\" y=\""
        << fixed2(f.top + f.height + 16) << "\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  }
  for (double t : y.ticks) {
    std::string py = fixed2(f.py(y, t));
    out << "<line x1=\"" << fixed2(f.left) << "\" y1=\"" << py << "\" x2=\"" << fixed2(f.left + f.width) << "\" y2=\""
        << py << "\" stroke=\"#ddd\"/>\n<text x=\"" << fixed2(f.left - 6) << "\" y=\"" << py
        << "\" text-anchor=\"end\" dominant-baseline=\"middle\">" << tick_label(t) << "</text>\n";
  }
  out << "<text x=\"" << fixed2(f.left + f.width / 2) << "\" y=\"" << fixed2(f.top + f.height + 40)
      << "\" text-anchor=\"middle\">" << escape(o.x_label) << "</text>\n";
  out << "<text transform=\"translate(16 " << fixed2(f.top + f.height / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(o.y_label) << "</text>\n";
  out << "<text x=\"" << fixed2(f.left + f.width / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
      << escape(o.title) << "</text>\n";
}

// Each run of usable points becomes one polyline, so a gap (nan, inf, y <= 0 on log) is not bridged.
void draw_series(std::ostream& out, const Frame& f, const Axis& x, const Axis& y, const PlotSeries& s,
                 const char* colour, bool markers) {
  std::string points;
  auto flush = [&] {
    if (!points.empty())
      out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\"" << points << "\"/>\n";
    points.clear();
  };
  for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    if (!usable(s.x[i], s.y[i], x.log, y.log)) {
      flush();
      continue;
    }
    if (!points.empty()) points += ' ';
    points += fixed2(f.px(x, s.x[i])) + "," + fixed2(f.py(y, s.y[i]));
    if (markers)
      out << "<circle cx=\"" << fixed2(f.px(x, s.x[i])) << "\" cy=\"" << fixed2(f.py(y, s.y[i])) << "\" r=\"3\" fill=\""
          << colour << "\"/>\n";
  }
  flush();
}

void draw_legend(std::ostream& out, const Frame& f, const std::vector<PlotSeries>& series) {
  double y = f.top + 14;
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (series[i].label.empty()) continue;
    double x = f.left + f.width - 150;
    out << "<line x1=\"" << fixed2(x) << "\" y1=\"" << fixed2(y) << "\" x2=\"" << fixed2(x + 20) << "\" y2=\""
        << fixed2(y) << "\" stroke=\"" << kColours[i % 8] << "\" stroke-width=\"2\"/>\n<text x=\"" << fixed2(x + 26)
        << "\" y=\"" << fixed2(y) << "\" dominant-baseline=\"middle\">" << escape(series[i].label) << "</text>\n";
    y += 16;
  }
}

}  // namespace

std::string render_line_plot(const std::vector<PlotSeries>& series, const PlotOptions& options) {
  auto [x, y] = make_axes(series, options.log_x, options.log_y);
  Frame f{kLeft, kTop, options.width - kLeft - kRight, options.height - kTop - kBottom};
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << options.width << "\" height=\""
      << options.height << "\" viewBox=\"0 0 " << options.width << " " << options.height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  draw_axes(out, f, x, y, options);
  for (std::size_t i = 0; i < series.size(); ++i)
    draw_series(out, f, x, y, series[i], kColours[i % 8], options.markers);
  draw_legend(out, f, series);
  out << "</svg>\n";
  return out.str();
}

}  // namespace placesim
