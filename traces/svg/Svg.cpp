#include "traces/svg/Svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "traces/chrome/TraceCounters.hpp"
#include "traces/chrome/TraceLayout.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/report/JsonText.hpp"
#include "workloads/json/Error.hpp"

namespace placesim {

namespace {

constexpr double kLabelWidth = 250, kRightMargin = 20, kTop = 64, kLaneHeight = 12, kLaneGap = 2;
constexpr double kMemoryHeight = 28, kRowGap = 12, kAxisHeight = 40, kMergeGap_px = 0.5, kMergeWidth_px = 1,
                 kMinWidth_px = 0.5;
constexpr int kKinds = 8;
constexpr std::array<const char*, kKinds> kColours = {"#4e79a7", "#f28e2b", "#edc948", "#b07aa1",
                                                      "#e15759", "#59a14f", "#76b7b2", "#9c755f"};

/// Horizontal scale: nanoseconds to pixels.
struct TimeScale {
  double x0 = kLabelWidth, width = 1;
  std::int64_t end_ns = 1;
  double x(std::int64_t ns) const { return x0 + width * static_cast<double>(ns) / static_cast<double>(end_ns); }
};

/// Appends `text` as an SVG element, coordinates with 2 decimals.
class SvgText {
 public:
  std::string out;
  void num(double v) { append_fixed(out, v, 2); }
  void attr(const char* name, double v) {
    out += ' ';
    out += name;
    out += "=\"";
    num(v);
    out += '"';
  }
  void text(double x, double y, const char* style, std::string_view content) {
    out += "<text";
    attr("x", x);
    attr("y", y);
    out += " class=\"";
    out += style;
    out += "\">";
    append_xml_escaped(out, content);
    out += "</text>\n";
  }
};

std::string duration_text(std::int64_t ns) {
  std::string s;
  append_fixed(s, static_cast<double>(ns) * 1e-6, 3);
  return s + " ms";
}

std::int64_t end_of_time(const SimulationRecord& record, const TraceLayout& layout,
                         const std::vector<MemorySeries>& memory) {
  std::int64_t end = std::max<std::int64_t>(1, to_ns(record.step_time_s));
  for (const Lane& lane : layout.lanes) end = std::max(end, lane.slices.back().end_ns);
  for (const MemorySeries& m : memory)
    if (!m.points.empty()) end = std::max(end, m.points.back().ns);
  return end;
}

/// Draws one lane's boxes, merging same-kind neighbours closer than half a pixel; returns the boxes drawn.
std::size_t draw_lane(SvgText& svg, const SimulationRecord& record, const Lane& lane, const TimeScale& t, double y,
                      std::array<bool, kKinds>& kinds_seen) {
  std::size_t boxes = 0;
  const auto& slices = lane.slices;
  for (std::size_t i = 0; i < slices.size();) {
    TaskKind kind = record.tasks[slices[i].task].kind;
    double x0 = t.x(slices[i].start_ns), x1 = t.x(slices[i].end_ns);
    std::size_t j = i + 1;
    // A sub-pixel task adjoining a box of its kind adds nothing visible on its own: it joins that box.
    for (; j < slices.size() && record.tasks[slices[j].task].kind == kind; ++j) {
      double start = t.x(slices[j].start_ns), end = t.x(slices[j].end_ns);
      if (start - x1 >= kMergeGap_px || end - start >= kMergeWidth_px) break;
      x1 = std::max(x1, end);
    }
    kinds_seen[static_cast<std::size_t>(kind)] = true;
    svg.out += "<rect class=\"box k";
    svg.out += std::to_string(static_cast<int>(kind));
    svg.out += '"';
    svg.attr("x", x0);
    svg.attr("y", y);
    svg.attr("width", std::max(x1 - x0, kMinWidth_px));
    svg.attr("height", kLaneHeight);
    svg.out += "><title>";
    std::string title =
        j == i + 1 ? slice_name(record, slices[i]) + " (" + duration_text(slices[i].end_ns - slices[i].start_ns) + ")"
                   : std::to_string(j - i) + " " + to_string(kind) + " tasks";
    append_xml_escaped(svg.out, title);
    svg.out += "</title></rect>\n";
    ++boxes;
    i = j;
  }
  return boxes;
}

/// The largest resident total within each pixel column; -1 before the device's first memory event.
std::vector<double> memory_envelope(const MemorySeries& m, const TimeScale& t) {
  const int columns = static_cast<int>(std::ceil(t.width));
  std::vector<double> top(static_cast<std::size_t>(columns), -1);
  auto column = [&](std::int64_t ns) { return std::clamp(static_cast<int>(t.x(ns) - t.x0), 0, columns - 1); };
  for (std::size_t k = 0; k < m.points.size(); ++k) {
    std::int64_t until = k + 1 < m.points.size() ? m.points[k + 1].ns : t.end_ns;
    for (int c = column(m.points[k].ns); c <= column(until); ++c)
      top[static_cast<std::size_t>(c)] = std::max(top[static_cast<std::size_t>(c)], m.points[k].total());
  }
  return top;
}

/// The span of memory the strips show, shared by all rows so that they compare: from the lowest to the highest
/// column maximum. Starting at zero instead would flatten the curve under the resident model states.
struct MemoryRange {
  double lo = 0, hi = 0;
};

MemoryRange memory_range(const std::vector<std::vector<double>>& envelopes) {
  MemoryRange r{-1, -1};
  for (const auto& top : envelopes)
    for (double v : top) {
      if (v < 0) continue;
      r.lo = r.lo < 0 ? v : std::min(r.lo, v);
      r.hi = std::max(r.hi, v);
    }
  return r;
}

/// Draws the device's memory strip: its envelope as a step line and its peak as a label.
void draw_memory(SvgText& svg, const MemorySeries& m, const std::vector<double>& top, const TimeScale& t, double y,
                 MemoryRange range) {
  svg.out += "<rect class=\"strip\"";
  svg.attr("x", t.x0);
  svg.attr("y", y);
  svg.attr("width", t.width);
  svg.attr("height", kMemoryHeight);
  svg.out += "/>\n";
  if (m.points.empty()) return;
  svg.out += "<polyline class=\"mem\" points=\"";
  for (std::size_t c = 0; c < top.size(); ++c) {
    if (top[c] < 0) continue;
    double share = range.hi > range.lo ? (top[c] - range.lo) / (range.hi - range.lo) : 0.5;
    double level = y + kMemoryHeight - 1 - (kMemoryHeight - 2) * share;
    for (int edge = 0; edge < 2; ++edge) {
      svg.num(t.x0 + static_cast<double>(c) + edge);
      svg.out += ',';
      svg.num(level);
      svg.out += ' ';
    }
  }
  svg.out += "\"/>\n";
  std::string label = "memory, peak ";
  append_fixed(label, m.peak_total / 1e9, 2);
  svg.text(kLabelWidth - 6, y + kMemoryHeight / 2 + 3, "small end", label + " GB");
}

/// Ticks at 1, 2 or 5 times a power of ten, about eight of them, labelled in µs, ms or s.
void draw_axis(SvgText& svg, const TimeScale& t, double y) {
  const double end_s = static_cast<double>(t.end_ns) * 1e-9;
  const double raw = end_s / 8, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  const double unit = end_s < 1e-3 ? 1e-6 : end_s < 1 ? 1e-3 : 1;
  const char* unit_name = unit == 1e-6 ? " us" : unit == 1e-3 ? " ms" : " s";
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step / unit) + 1e-9)));
  svg.out += "<line class=\"axis\"";
  svg.attr("x1", t.x0);
  svg.attr("y1", y);
  svg.attr("x2", t.x0 + t.width);
  svg.attr("y2", y);
  svg.out += "/>\n";
  for (int k = 0; k * step <= end_s * (1 + 1e-9); ++k) {
    double x = t.x0 + t.width * (k * step) / end_s;
    svg.out += "<line class=\"axis\"";
    svg.attr("x1", x);
    svg.attr("y1", y);
    svg.attr("x2", x);
    svg.attr("y2", y + 5);
    svg.out += "/>\n";
    std::string label;
    append_fixed(label, k * step / unit, decimals);
    svg.text(x, y + 17, "small mid", label + unit_name);
  }
}

void draw_legend(SvgText& svg, const std::array<bool, kKinds>& kinds_seen, MemoryRange memory, double y) {
  double x = kLabelWidth;
  for (int k = 0; k < kKinds; ++k) {
    if (!kinds_seen[static_cast<std::size_t>(k)]) continue;
    svg.out += "<rect class=\"k" + std::to_string(k) + "\"";
    svg.attr("x", x);
    svg.attr("y", y - 9);
    svg.attr("width", 10);
    svg.attr("height", 10);
    svg.out += "/>\n";
    std::string name = to_string(static_cast<TaskKind>(k));
    svg.text(x + 14, y, "label", name);
    x += 24 + 7.0 * static_cast<double>(name.size());
  }
  svg.out += "<line class=\"mem\"";
  svg.attr("x1", x);
  svg.attr("y1", y - 4);
  svg.attr("x2", x + 16);
  svg.attr("y2", y - 4);
  svg.out += "/>\n";
  std::string label = "resident memory";
  if (memory.hi > 0) {
    label += " (strips span ";
    append_fixed(label, memory.lo / 1e9, 2);
    label += "-";
    append_fixed(label, memory.hi / 1e9, 2);
    label += " GB)";
  }
  svg.text(x + 20, y, "label", label);
}

double row_height(std::size_t lanes) {
  return static_cast<double>(std::max<std::size_t>(lanes, 1)) * (kLaneHeight + kLaneGap) + kMemoryHeight + kRowGap;
}

std::string style() {
  std::string css = "<style>\n.box{stroke:none}\n";
  for (int k = 0; k < kKinds; ++k)
    css += ".k" + std::to_string(k) + "{fill:" + kColours[static_cast<std::size_t>(k)] + "}\n";
  css +=
      ".label{font-size:11px;fill:#222}\n.title{font-size:15px;font-weight:bold;fill:#222}\n"
      ".small{font-size:9px;fill:#555}\n.end{text-anchor:end}\n.mid{text-anchor:middle}\n"
      ".strip{fill:#f3f3f3}\n.mem{fill:none;stroke:#333;stroke-width:1}\n.axis{stroke:#666;stroke-width:1}\n"
      "</style>\n";
  return css;
}

}  // namespace

SvgSummary write_timeline_svg(const std::string& path, const SimulationRecord& record, const SvgOptions& options) {
  if (options.max_rows < 1)
    throw InputError("svg max_rows=" + std::to_string(options.max_rows) + " must be at least 1");
  if (options.width_px < kLabelWidth + kRightMargin + 100)
    throw InputError("svg width_px=" + std::to_string(options.width_px) + " is too narrow (at least 370)");
  std::vector<int> order = mesh_order(record, options.trace.devices);
  SvgSummary summary;
  summary.devices = std::min(order.size(), static_cast<std::size_t>(options.max_rows));
  summary.devices_omitted = order.size() - summary.devices;
  order.resize(summary.devices);
  std::sort(order.begin(), order.end());
  TraceLayout layout = layout_trace(record, TraceOptions{order, options.trace.detail});
  std::vector<MemorySeries> memory = memory_series(record, layout.devices);
  TimeScale t{kLabelWidth, options.width_px - kLabelWidth - kRightMargin, end_of_time(record, layout, memory)};
  std::vector<std::vector<double>> envelopes;
  for (const MemorySeries& m : memory) envelopes.push_back(memory_envelope(m, t));
  const MemoryRange range = memory_range(envelopes);
  double height = kTop + kAxisHeight + 20;
  std::vector<std::size_t> lanes_of(layout.devices.size(), 0);
  for (std::size_t d = 0, l = 0; d < layout.devices.size(); ++d) {
    for (; l < layout.lanes.size() && layout.lanes[l].device == layout.devices[d]; ++l) ++lanes_of[d];
    height += row_height(lanes_of[d]);
  }

  OutputFile out(path);
  SvgText svg;
  svg.out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"";
  svg.attr("width", options.width_px);
  svg.attr("height", height);
  svg.out += " font-family=\"sans-serif\">\n" + style() + "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string heading = (options.title.empty() ? std::string("placesim timeline") : options.title) + " — " +
                        std::to_string(summary.devices) + " devices, step " + duration_text(to_ns(record.step_time_s));
  svg.text(8, 22, "title", heading);
  std::array<bool, kKinds> kinds_seen{};
  double y = kTop;
  for (std::size_t d = 0, l = 0; d < layout.devices.size(); ++d) {
    svg.text(8, y + kLaneHeight - 2, "label", record.devices[static_cast<std::size_t>(layout.devices[d])].name());
    for (std::size_t k = 0; k < lanes_of[d]; ++k, ++l) {
      double lane_y = y + static_cast<double>(k) * (kLaneHeight + kLaneGap);
      std::string stream = to_string(layout.lanes[l].stream);
      if (layout.lanes[l].index > 0) stream += " #" + std::to_string(layout.lanes[l].index + 1);
      svg.text(kLabelWidth - 6, lane_y + kLaneHeight - 3, "small end", stream);
      summary.boxes += draw_lane(svg, record, layout.lanes[l], t, lane_y, kinds_seen);
    }
    double strip_y = y + static_cast<double>(std::max<std::size_t>(lanes_of[d], 1)) * (kLaneHeight + kLaneGap);
    draw_memory(svg, memory[d], envelopes[d], t, strip_y, range);
    y += row_height(lanes_of[d]);
    out.write(svg.out);
    svg.out.clear();
  }
  draw_axis(svg, t, y);
  draw_legend(svg, kinds_seen, range, 46);
  if (summary.devices_omitted > 0)
    svg.text(8, y + kAxisHeight, "small",
             std::to_string(summary.devices_omitted) + " more selected devices are not drawn (select fewer devices)");
  svg.out += "</svg>\n";
  out.write(svg.out);
  out.close();
  return summary;
}

}  // namespace placesim
