#include "traces/svg/Svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "traces/chrome/TraceCounters.hpp"
#include "traces/chrome/TraceLayout.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/report/JsonText.hpp"
#include "traces/svg/SvgRows.hpp"
#include "workloads/json/Error.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

// Lanes are 16 px so that 12 px micro-batch numbers fit inside the boxes.
constexpr double kLabelWidth = 250, kRightMargin = 20, kTop = 72, kLaneHeight = 16, kLaneGap = 2;
constexpr double kMemoryHeight = 28, kRowGap = 12, kAxisHeight = 44, kNoteHeight = 18, kMergeGap_px = 0.5,
                 kMergeWidth_px = 1, kMinWidth_px = 0.5;
// A block at least kPartedWidth_px wide that another adjoins ends kSeparation_px early, so blocks never fuse into a
// bar.
constexpr double kSeparation_px = 1, kPartedWidth_px = 2;
// A micro-batch number needs about this much per digit at 12 px, plus a margin.
constexpr double kDigitWidth_px = 7, kLabelMargin_px = 4;
constexpr int kKinds = 8;
constexpr std::array<const char*, kKinds> kColours = {"#4e79a7", "#f28e2b", "#edc948", "#b07aa1",
                                                      "#e15759", "#59a14f", "#76b7b2", "#9c755f"};

/// Horizontal scale: nanoseconds in [start_ns, end_ns] to pixels.
struct TimeScale {
  double x0 = kLabelWidth, width = 1;
  std::int64_t start_ns = 0, end_ns = 1;
  double x(std::int64_t ns) const {
    return x0 + width * static_cast<double>(ns - start_ns) / static_cast<double>(end_ns - start_ns);
  }
  std::int64_t clip(std::int64_t ns) const { return std::clamp(ns, start_ns, end_ns); }
  // Zero-length slices count when they lie within the window.
  bool shows(const Slice& s) const {
    return (s.start_ns < end_ns && s.end_ns > start_ns) || (s.start_ns >= start_ns && s.end_ns <= end_ns);
  }
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

/// When the step is over: its step time or its last task, whichever is later.
std::int64_t step_end(const SimulationRecord& record) {
  std::int64_t end = to_ns(record.step_time_s);
  for (const TaskRecord& t : record.tasks) end = std::max(end, to_ns(t.end_s));
  return end;
}

/// The span drawn: the window, else from 0 to the last thing drawn.
TimeScale time_scale(const SimulationRecord& record, const TraceLayout& layout, const std::vector<MemorySeries>& memory,
                     const SvgOptions& options) {
  const double width = options.width_px - kLabelWidth - kRightMargin;
  if (options.window) {
    if (to_ns(options.window->start_s) >= step_end(record))
      throw InputError("--time-window=" + shown_window(*options.window) + " starts at or after the end of the step (" +
                       duration_text(step_end(record)) + ")");
    return TimeScale{kLabelWidth, width, to_ns(options.window->start_s), to_ns(options.window->end_s)};
  }
  std::int64_t end = std::max<std::int64_t>(1, to_ns(record.step_time_s));
  for (const Lane& lane : layout.lanes) end = std::max(end, lane.slices.back().end_ns);
  for (const MemorySeries& m : memory)
    if (!m.points.empty()) end = std::max(end, m.points.back().ns);
  return TimeScale{kLabelWidth, width, 0, end};
}

bool is_compute(TaskKind k) {
  return k == TaskKind::Forward || k == TaskKind::Backward || k == TaskKind::Recompute || k == TaskKind::WeightGrad;
}

/// A box to draw: one slice, or sub-pixel slices of one kind joined.
struct Box {
  double x0 = 0, x1 = 0;
  TaskKind kind = TaskKind::Forward;
  int microbatch = -1, chunk = -1;  ///< shared by all its compute tasks; -1 when they differ or for other kinds
  std::string title;
};

/// The boxes of a lane's slices within the scale's span, clipped to it; a sub-pixel slice adjoining a box of its kind
/// adds nothing visible on its own, so it joins that box.
std::vector<Box> lane_boxes(const SimulationRecord& record, const Lane& lane, const TimeScale& t) {
  std::vector<Box> boxes;
  const auto& slices = lane.slices;
  for (std::size_t i = 0; i < slices.size();) {
    if (!t.shows(slices[i])) {
      ++i;
      continue;
    }
    const TaskRecord& first = record.tasks[slices[i].task];
    const bool compute = is_compute(first.kind);
    Box b{t.x(t.clip(slices[i].start_ns)), t.x(t.clip(slices[i].end_ns)), first.kind,
          compute ? first.microbatch : -1, compute ? first.chunk : -1,    ""};
    std::size_t j = i + 1;
    for (; j < slices.size() && t.shows(slices[j]) && record.tasks[slices[j].task].kind == b.kind; ++j) {
      double start = t.x(t.clip(slices[j].start_ns)), end = t.x(t.clip(slices[j].end_ns));
      if (start - b.x1 >= kMergeGap_px || end - start >= kMergeWidth_px) break;
      b.x1 = std::max(b.x1, end);
      const TaskRecord& joined = record.tasks[slices[j].task];
      if (joined.microbatch != b.microbatch || joined.chunk != b.chunk) b.microbatch = b.chunk = -1;
    }
    b.title = j == i + 1
                  ? slice_name(record, slices[i]) + " (" + duration_text(slices[i].end_ns - slices[i].start_ns) + ")"
                  : std::to_string(j - i) + " " + to_string(b.kind) + " tasks";
    boxes.push_back(std::move(b));
    i = j;
  }
  return boxes;
}

/// Whether `next` continues the block of `box`: a compute box of the same pass (forward, or backward with its
/// recompute) on the same micro-batch and chunk. The layers of one micro-batch stay one block across the short gaps
/// their tensor-parallel collectives leave.
bool same_block(const Box& box, const Box& next) {
  return box.microbatch >= 0 && next.microbatch == box.microbatch && next.chunk == box.chunk &&
         (next.kind == TaskKind::Forward) == (box.kind == TaskKind::Forward);
}

void draw_box(SvgText& svg, const Box& b, double x1, double y) {
  svg.out += "<rect class=\"box k";
  svg.out += std::to_string(static_cast<int>(b.kind));
  svg.out += '"';
  svg.attr("x", b.x0);
  svg.attr("y", y);
  svg.attr("width", std::max(x1 - b.x0, kMinWidth_px));
  svg.attr("height", kLaneHeight);
  svg.out += "><title>";
  append_xml_escaped(svg.out, b.title);
  svg.out += "</title></rect>\n";
}

/// Draws a lane's boxes block by block: a block that another adjoins ends a pixel early, and a block wide enough
/// carries its micro-batch number, centred on it.
void draw_lane(SvgText& svg, const std::vector<Box>& boxes, double y, SvgSummary& summary,
               std::array<bool, kKinds>& kinds_seen) {
  for (std::size_t i = 0; i < boxes.size();) {
    std::size_t j = i + 1;
    while (j < boxes.size() && same_block(boxes[j - 1], boxes[j])) ++j;
    const Box& last = boxes[j - 1];
    const bool parted =
        j < boxes.size() && boxes[j].x0 - last.x1 < kSeparation_px && last.x1 - last.x0 >= kPartedWidth_px;
    const double end = parted ? last.x1 - kSeparation_px : last.x1;
    for (std::size_t k = i; k < j; ++k) draw_box(svg, boxes[k], k + 1 == j ? end : boxes[k].x1, y);
    const std::string number = std::to_string(boxes[i].microbatch);
    if (boxes[i].microbatch >= 0 &&
        end - boxes[i].x0 >= kDigitWidth_px * static_cast<double>(number.size()) + kLabelMargin_px) {
      svg.text((boxes[i].x0 + end) / 2, y + kLaneHeight - 3.5, "mb mid", number);
      ++summary.labels;
    }
    for (std::size_t k = i; k < j; ++k) kinds_seen[static_cast<std::size_t>(boxes[k].kind)] = true;
    summary.boxes += j - i;
    i = j;
  }
}

/// The largest resident total within each pixel column; -1 before the device's first memory event.
std::vector<double> memory_envelope(const MemorySeries& m, const TimeScale& t) {
  const int columns = static_cast<int>(std::ceil(t.width));
  std::vector<double> top(static_cast<std::size_t>(columns), -1);
  auto column = [&](std::int64_t ns) { return std::clamp(static_cast<int>(t.x(ns) - t.x0), 0, columns - 1); };
  for (std::size_t k = 0; k < m.points.size(); ++k) {
    std::int64_t until = k + 1 < m.points.size() ? m.points[k + 1].ns : t.end_ns;
    if (until < t.start_ns || m.points[k].ns > t.end_ns) continue;  // outside the window
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
  svg.text(kLabelWidth - 6, y + kMemoryHeight / 2 + 4, "small end", label + " GB");
}

/// Ticks at 1, 2 or 5 times a power of ten, about eight of them over the span, labelled in µs, ms or s (the unit
/// that suits the end of the span, so that a late window still reads in seconds).
void draw_axis(SvgText& svg, const TimeScale& t, double y) {
  const double start_s = static_cast<double>(t.start_ns) * 1e-9, end_s = static_cast<double>(t.end_ns) * 1e-9;
  if (!(end_s > start_s)) return;  // an empty span has no ticks (parse_time_window refuses one below 1 ns)
  const double raw = (end_s - start_s) / 8, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
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
  for (auto k = static_cast<std::int64_t>(std::ceil(start_s / step - 1e-9)); k * step <= end_s * (1 + 1e-9); ++k) {
    double x = t.x0 + t.width * (static_cast<double>(k) * step - start_s) / (end_s - start_s);
    svg.out += "<line class=\"axis\"";
    svg.attr("x1", x);
    svg.attr("y1", y);
    svg.attr("x2", x);
    svg.attr("y2", y + 5);
    svg.out += "/>\n";
    std::string label;
    append_fixed(label, static_cast<double>(k) * step / unit, decimals);
    svg.text(x, y + 19, "small mid", label + unit_name);
  }
}

void draw_legend(SvgText& svg, const std::array<bool, kKinds>& kinds_seen, MemoryRange memory, double y) {
  double x = kLabelWidth;
  for (int k = 0; k < kKinds; ++k) {
    if (!kinds_seen[static_cast<std::size_t>(k)]) continue;
    svg.out += "<rect class=\"k" + std::to_string(k) + "\"";
    svg.attr("x", x);
    svg.attr("y", y - 11);
    svg.attr("width", 12);
    svg.attr("height", 12);
    svg.out += "/>\n";
    std::string name = to_string(static_cast<TaskKind>(k));
    svg.text(x + 16, y, "label", name);
    x += 28 + 8.0 * static_cast<double>(name.size());
  }
  svg.out += "<line class=\"mem\"";
  svg.attr("x1", x);
  svg.attr("y1", y - 5);
  svg.attr("x2", x + 16);
  svg.attr("y2", y - 5);
  svg.out += "/>\n";
  std::string label = "resident memory";
  if (memory.hi > 0) {
    label += " (strips span ";
    append_fixed(label, memory.lo / 1e9, 2);
    label += "-";
    append_fixed(label, memory.hi / 1e9, 2);
    label += " GB)";
  }
  label += "; numbers: micro-batches";
  svg.text(x + 20, y, "label", label);
}

double row_height(std::size_t lanes) {
  return static_cast<double>(std::max<std::size_t>(lanes, 1)) * (kLaneHeight + kLaneGap) + kMemoryHeight + kRowGap;
}

// Every font size is at least 12 px, so that the picture reads when scaled to a page.
std::string style() {
  std::string css = "<style>\n.box{stroke:none}\n";
  for (int k = 0; k < kKinds; ++k)
    css += ".k" + std::to_string(k) + "{fill:" + kColours[static_cast<std::size_t>(k)] + "}\n";
  css +=
      ".label{font-size:13px;fill:#222}\n.title{font-size:17px;font-weight:bold;fill:#222}\n"
      ".small{font-size:12px;fill:#444}\n.mb{font-size:12px;fill:#111;pointer-events:none}\n"
      ".end{text-anchor:end}\n.mid{text-anchor:middle}\n"
      ".strip{fill:#f3f3f3}\n.mem{fill:none;stroke:#333;stroke-width:1}\n.axis{stroke:#666;stroke-width:1}\n"
      "</style>\n";
  return css;
}

std::string heading(const SvgOptions& options, const SimulationRecord& record, const TimeScale& t, std::size_t rows) {
  std::string h = (options.title.empty() ? std::string("placesim timeline") : options.title) + " — " +
                  std::to_string(rows) + " devices, step " + format_seconds(record.step_time_s);
  if (options.window)
    h += ", window " + format_seconds(static_cast<double>(t.start_ns) * 1e-9) + " to " +
         format_seconds(static_cast<double>(t.end_ns) * 1e-9);
  return h;
}

}  // namespace

SvgSummary write_timeline_svg(const std::string& path, const SimulationRecord& record, const SvgOptions& options) {
  if (options.max_rows < 1)
    throw InputError("svg max_rows=" + std::to_string(options.max_rows) + " must be at least 1");
  if (options.width_px < kLabelWidth + kRightMargin + 100)
    throw InputError("svg width_px=" + std::to_string(options.width_px) + " is too narrow (at least 370)");
  SvgRows rows = svg_rows(record, options.trace.devices, options.all_tp_ranks, options.max_rows);
  SvgSummary summary;
  summary.devices = rows.devices.size();
  summary.devices_omitted = rows.omitted;
  summary.tp_ranks_hidden = rows.tp_hidden;
  std::vector<int> order = rows.devices;
  std::sort(order.begin(), order.end());
  TraceLayout layout = layout_trace(record, TraceOptions{order, options.trace.detail});
  std::vector<MemorySeries> memory = memory_series(record, layout.devices);
  const TimeScale t = time_scale(record, layout, memory, options);
  std::vector<std::vector<double>> envelopes;
  for (const MemorySeries& m : memory) envelopes.push_back(memory_envelope(m, t));
  const MemoryRange range = memory_range(envelopes);
  std::vector<std::string> notes;
  if (!rows.tp_note.empty()) notes.push_back(rows.tp_note + "; --svg-all-ranks draws them");
  if (summary.devices_omitted > 0)
    notes.push_back(std::to_string(summary.devices_omitted) +
                    " more selected devices are not drawn (select fewer devices)");
  double height = kTop + kAxisHeight + 12 + kNoteHeight * static_cast<double>(notes.size());
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
  svg.text(8, 24, "title", heading(options, record, t, summary.devices));
  std::array<bool, kKinds> kinds_seen{};
  double y = kTop;
  for (std::size_t d = 0, l = 0; d < layout.devices.size(); ++d) {
    svg.text(8, y + kLaneHeight - 3, "label", record.devices[static_cast<std::size_t>(layout.devices[d])].name());
    for (std::size_t k = 0; k < lanes_of[d]; ++k, ++l) {
      double lane_y = y + static_cast<double>(k) * (kLaneHeight + kLaneGap);
      std::string stream = to_string(layout.lanes[l].stream);
      if (layout.lanes[l].index > 0) stream += " #" + std::to_string(layout.lanes[l].index + 1);
      svg.text(kLabelWidth - 6, lane_y + kLaneHeight - 4, "small end", stream);
      draw_lane(svg, lane_boxes(record, layout.lanes[l], t), lane_y, summary, kinds_seen);
    }
    double strip_y = y + static_cast<double>(std::max<std::size_t>(lanes_of[d], 1)) * (kLaneHeight + kLaneGap);
    draw_memory(svg, memory[d], envelopes[d], t, strip_y, range);
    y += row_height(lanes_of[d]);
    out.write(svg.out);
    svg.out.clear();
  }
  draw_axis(svg, t, y);
  draw_legend(svg, kinds_seen, range, 52);
  for (std::size_t k = 0; k < notes.size(); ++k)
    svg.text(8, y + kAxisHeight + kNoteHeight * static_cast<double>(k), "small", notes[k]);
  svg.out += "</svg>\n";
  out.write(svg.out);
  out.close();
  return summary;
}

}  // namespace placesim
