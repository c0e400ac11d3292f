#include "traces/profiler/TraceCompare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

double kernel_sum(const TraceSummary& s) {
  double t = 0;
  for (double x : s.class_s) t += x;
  return t;
}

// Seconds with their sign, "-1.2 ms".
std::string signed_seconds(double s) {
  return (s < 0 ? "-" : "") + format_seconds(std::abs(s));
}

std::string percent(double x) {
  return format_significant(100 * x, 3) + " %";
}

// "14 % slower than modelled (+12.0 ms per step)".
std::string slower_or_faster(double measured, double simulated) {
  const double d = measured - simulated;
  std::string out;
  if (simulated > 0)
    out = percent(std::abs(measured / simulated - 1)) + (d > 0 ? " slower than modelled" : " faster than modelled");
  else
    out = "not modelled";
  return out + " (" + (d >= 0 ? "+" : "-") + format_seconds(std::abs(d)) + " per step)";
}

}  // namespace

TraceComparison compare_summaries(const TraceSummary& m, const TraceSummary& s) {
  TraceComparison c;
  c.measured_step_s = m.period_s;
  c.simulated_step_s = s.period_s;
  for (int p = 0; p < kPhases; ++p)
    for (int k = 0; k < kKernelClasses; ++k) {
      const double a = m.phase_s[p][k], b = s.phase_s[p][k];
      if (a == 0 && b == 0) continue;
      c.rows.push_back(
          {std::string(to_string(static_cast<Phase>(p))) + " " + to_string(static_cast<KernelClass>(k)), a, b});
    }
  c.rows.push_back({"overlap", -(kernel_sum(m) - m.busy_s), -(kernel_sum(s) - s.busy_s)});
  c.rows.push_back({"idle: launch gaps", m.launch_gaps_s, s.launch_gaps_s});
  c.rows.push_back({"idle: host stalls", m.host_stalls_s, s.host_stalls_s});
  // Collectives matched by operation, group size and size bucket.
  std::map<std::tuple<std::string, int, long>, CollectiveComparison> by;
  auto key = [](const CollectiveSummary& x) {
    return std::make_tuple(x.op, x.group_size, std::lround(std::floor(std::log2(std::max(1.0, x.bytes)))));
  };
  for (const CollectiveSummary& x : m.collectives) {
    auto& e = by[key(x)];
    e = {x.op, x.group_size, x.bytes, x.bus_bw_Bps, e.simulated_bw_Bps};
  }
  for (const CollectiveSummary& x : s.collectives) {
    auto it = by.find(key(x));
    if (it != by.end()) it->second.simulated_bw_Bps = x.bus_bw_Bps;
  }
  for (const auto& [k, v] : by)
    if (v.measured_bw_Bps > 0 && v.simulated_bw_Bps > 0) c.collectives.push_back(v);
  // Findings: the rows whose difference is at least 1 % of the measured step, the largest first.
  std::vector<const CompareRow*> big;
  for (const CompareRow& r : c.rows)
    if (std::abs(r.difference_s()) >= 0.01 * std::max(c.measured_step_s, c.simulated_step_s)) big.push_back(&r);
  std::sort(big.begin(), big.end(), [](const CompareRow* a, const CompareRow* b) {
    return std::abs(a->difference_s()) > std::abs(b->difference_s());
  });
  for (const CompareRow* r : big) {
    if (r->what == "idle: host stalls" && r->difference_s() > 0)
      c.findings.push_back(format_seconds(r->difference_s()) +
                           " per step of host time (GPU idle in stalls longer than a launch) that placesim does not "
                           "cost: set training.host_time_per_step, or calibrate from this trace");
    else if (r->what == "overlap")
      c.findings.push_back(std::string("kernels running at once: ") + format_seconds(-r->measured_s) +
                           " per step measured, " + format_seconds(-r->simulated_s) + " simulated");
    else
      c.findings.push_back(r->what + ": " + slower_or_faster(r->measured_s, r->simulated_s));
  }
  for (const CollectiveComparison& x : c.collectives)
    if (std::abs(x.measured_bw_Bps / x.simulated_bw_Bps - 1) >= 0.02)
      c.findings.push_back(x.op + " over " + std::to_string(x.group_size) + " ranks at " + format_bytes(x.bytes) +
                           ": bus bandwidth " + percent(x.measured_bw_Bps / x.simulated_bw_Bps) + " of the model's (" +
                           format_significant(x.measured_bw_Bps / 1e9, 3) + " vs " +
                           format_significant(x.simulated_bw_Bps / 1e9, 3) + " GB/s)");
  return c;
}

std::string comparison_text(const TraceComparison& c) {
  std::ostringstream o;
  o << "step: measured " << format_seconds(c.measured_step_s) << ", simulated " << format_seconds(c.simulated_step_s)
    << " (" << (c.measured_step_s >= c.simulated_step_s ? "+" : "-")
    << format_seconds(std::abs(c.measured_step_s - c.simulated_step_s)) << ")\n";
  auto cell = [](std::string text, std::size_t width) {
    text.resize(std::max(text.size(), width), ' ');
    return text;
  };
  o << "  " << cell("per step", 24) << cell("measured", 14) << cell("simulated", 14) << "difference\n";
  for (const CompareRow& r : c.rows)
    o << "  " << cell(r.what, 24) << cell(signed_seconds(r.measured_s), 14) << cell(signed_seconds(r.simulated_s), 14)
      << (r.difference_s() >= 0 ? "+" : "") << signed_seconds(r.difference_s()) << "\n";
  if (!c.findings.empty()) o << "where the run differs from the model:\n";
  for (const std::string& f : c.findings) o << "  - " << f << "\n";
  return o.str();
}

Json comparison_json(const TraceComparison& c) {
  Json rows = Json::array();
  for (const CompareRow& r : c.rows)
    rows.push_back(Json{{"what", r.what},
                        {"measured_s", r.measured_s},
                        {"simulated_s", r.simulated_s},
                        {"difference_s", r.difference_s()}});
  Json coll = Json::array();
  for (const CollectiveComparison& x : c.collectives)
    coll.push_back(Json{{"op", x.op},
                        {"group_size", x.group_size},
                        {"bytes", x.bytes},
                        {"measured_bus_bw_GBps", x.measured_bw_Bps / 1e9},
                        {"simulated_bus_bw_GBps", x.simulated_bw_Bps / 1e9}});
  return Json{{"measured_step_s", c.measured_step_s},
              {"simulated_step_s", c.simulated_step_s},
              {"rows", rows},
              {"collectives", coll},
              {"findings", c.findings}};
}

namespace {

// Each kernel class's colour in the timeline (Tableau 10).
constexpr EnumName<KernelClass> kClassColours[] = {
    {KernelClass::Gemm, "#4e79a7"},        {KernelClass::Attention, "#f28e2b"}, {KernelClass::Normalization, "#76b7b2"},
    {KernelClass::Elementwise, "#59a14f"}, {KernelClass::Optimizer, "#edc948"}, {KernelClass::Collective, "#e15759"},
    {KernelClass::Copy, "#b07aa1"}};

const char* class_colour(KernelClass k) {
  return name_of(kClassColours, k, "#999999");
}

struct Lane {
  std::string label;
  std::vector<const TraceKernel*> kernels;
};

// The rows of the first step of the first rank of `t`: a lane per stream, kernels relative to the step's start.
std::vector<Lane> lanes_of(const ProfilerTrace& t, const TraceSummary& s, const std::string& which, double* start,
                           double* period) {
  std::vector<Lane> out;
  if (s.steps.empty()) return out;
  const StepSummary& st = s.steps.front();
  *start = st.start_s;
  *period = st.period_s;
  std::map<std::int64_t, Lane> by;
  for (const TraceKernel& k : t.kernels) {
    if (k.rank != st.rank || k.start_s + k.dur_s <= st.start_s || k.start_s >= st.start_s + st.period_s) continue;
    Lane& l = by[k.stream];
    l.label = which + " stream " + std::to_string(k.stream);
    l.kernels.push_back(&k);
  }
  for (auto& [id, l] : by) out.push_back(std::move(l));
  return out;
}

}  // namespace

std::string comparison_svg(const ProfilerTrace& measured, const TraceSummary& ms, const ProfilerTrace& simulated,
                           const TraceSummary& ss) {
  double m0 = 0, mp = 0, s0 = 0, sp = 0;
  std::vector<Lane> lanes = lanes_of(measured, ms, "measured", &m0, &mp);
  const std::size_t measured_lanes = lanes.size();
  for (Lane& l : lanes_of(simulated, ss, "simulated", &s0, &sp)) lanes.push_back(std::move(l));
  const double span = std::max({mp, sp, 1e-9});
  const double left = 170, width = 1000, row = 22;
  const double height = 40 + row * static_cast<double>(lanes.size()) + 30;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 20 << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<text x=\"10\" y=\"16\" font-size=\"13\">one step, measured (" << format_seconds(mp) << ") above simulated ("
    << format_seconds(sp) << ")</text>\n";
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const double y = 30 + row * static_cast<double>(i);
    const double t0 = i < measured_lanes ? m0 : s0;
    o << "<text x=\"10\" y=\"" << y + 14 << "\">" << lanes[i].label << "</text>\n";
    for (const TraceKernel* k : lanes[i].kernels) {
      const double x = left + width * std::max(0.0, k->start_s - t0) / span;
      const double w = std::max(0.5, width * k->dur_s / span);
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << row - 4 << "\" fill=\""
        << class_colour(k->cls) << "\"><title>" << to_string(k->cls) << " " << format_seconds(k->dur_s)
        << "</title></rect>\n";
    }
  }
  double x = left;
  const double y = height - 14;
  for (int k = 0; k < kKernelClasses; ++k) {
    o << "<rect x=\"" << x << "\" y=\"" << y - 9 << "\" width=\"10\" height=\"10\" fill=\""
      << class_colour(static_cast<KernelClass>(k)) << "\"/><text x=\"" << x + 14 << "\" y=\"" << y << "\">"
      << to_string(static_cast<KernelClass>(k)) << "</text>\n";
    x += 110;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace placesim
