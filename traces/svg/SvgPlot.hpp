#pragma once
#include <string>
#include <vector>

#include "workloads/json/Numbers.hpp"

namespace placesim {

/// One line of a plot: points (x[i], y[i]) joined in order.
struct PlotSeries {
  std::string label;
  std::vector<double> x, y;
};

struct PlotOptions {
  std::string title, x_label, y_label;
  bool log_y = false;             ///< decades on the y axis; points with y < 1e-300 are then left out
  bool log_x = false;             ///< the same for the x axis
  bool markers = false;           ///< a dot on every point (for lines of a few points)
  int width = 720, height = 440;  ///< pixels
};

/// A self-contained SVG 1.1 line plot: axes with round-number ticks (1-2-5 steps, or decades for log_y), one
/// coloured polyline per series, a legend when a series has a label. Points left out (non-finite, or too
/// small for log_y) break a line into pieces rather than stretching the axes. Text is XML-escaped and numbers are
/// written in the C locale, so equal input gives byte-identical output.
std::string render_line_plot(const std::vector<PlotSeries>& series, const PlotOptions& options);

}  // namespace placesim
