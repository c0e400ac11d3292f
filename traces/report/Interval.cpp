#include "traces/report/Interval.hpp"

#include <cmath>

#include "workloads/json/Embedded.hpp"

namespace placesim {

namespace {

constexpr const char* kResiduals = "workloads/stack/residuals.json";
constexpr int kMinRuns = 3;

struct Group {
  std::string family, generation;
  std::vector<double> log_ratios;
};

const std::vector<Group>& groups() {
  static const std::vector<Group> table = [] {
    std::vector<Group> out;
    const auto text = embedded_file(kResiduals);
    if (!text) return out;
    const Json j = parse_json_text(std::string(*text), kResiduals);
    for (const Json& g : j.at("groups")) {
      Group group{g.at("family").get<std::string>(), g.at("generation").get<std::string>(), {}};
      for (const Json& r : g.at("log_ratios")) group.log_ratios.push_back(r.get<double>());
      out.push_back(std::move(group));
    }
    return out;
  }();
  return table;
}

}  // namespace

PredictionInterval interval_from_residuals(const std::vector<double>& log_ratios, double step_time_s) {
  PredictionInterval out;
  const int n = static_cast<int>(log_ratios.size());
  out.runs = n;
  if (n < kMinRuns) return out;
  double mean = 0, ss = 0;
  for (double r : log_ratios) mean += r / n;
  for (double r : log_ratios) ss += (r - mean) * (r - mean);
  const double sd = std::sqrt(ss / (n - 1));
  const double half = student_t95(n - 1) * sd * std::sqrt(1 + 1.0 / n);
  out.available = true;
  out.centre_s = step_time_s * std::exp(mean);
  out.low_s = step_time_s * std::exp(mean - half);
  out.high_s = step_time_s * std::exp(mean + half);
  return out;
}

double student_t95(int dof) {
  // Student's t, one-sided 0.95 quantiles (any statistics table): dof 1-30, then 40, 60, 120 and the normal's 1.645.
  static const double head[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                                1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                                1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  if (dof < 1) return std::nan("");
  if (dof <= 30) return head[dof - 1];
  // Beyond 30 the quantile is near linear in 1/dof between the tabulated points.
  static const double at[][2] = {{30, 1.697}, {40, 1.684}, {60, 1.671}, {120, 1.658}, {1e300, 1.645}};
  for (int k = 1; k < 5; ++k)
    if (dof <= at[k][0]) {
      const double x = 1.0 / dof, x0 = 1.0 / at[k - 1][0], x1 = 1.0 / at[k][0];
      return at[k - 1][1] + (at[k][1] - at[k - 1][1]) * (x - x0) / (x1 - x0);
    }
  return 1.645;
}

PredictionInterval prediction_interval(const Experiment& e, const AcceleratorSpec& acc, double step_time_s) {
  PredictionInterval out;
  out.family = e.stack ? e.stack->family : "";
  out.generation = acc.generation;
  if (e.stack && e.stack_from == "default") {
    out.basis = "no interval: no training stack named (placesim's default, " + e.stack->name +
                ", was assumed; name the run's stack for its family's interval: runs of unnamed stacks miss by more)";
    return out;
  }
  if (out.family.empty() || out.generation.empty()) {
    out.basis = "no interval: the " + std::string(out.family.empty() ? "training stack" : "accelerator") +
                " has no family placesim checked published runs of";
    return out;
  }
  for (const Group& g : groups()) {
    if (g.family != out.family || g.generation != out.generation) continue;
    PredictionInterval found = interval_from_residuals(g.log_ratios, step_time_s);
    out.runs = found.runs;
    if (!found.available) break;
    found.family = out.family;
    found.generation = out.generation;
    found.basis = "from " + std::to_string(found.runs) + " published " + out.family + " runs on " + out.generation +
                  ", the development tables' residuals: workloads/stack/residuals.json";
    return found;
  }
  out.basis = out.runs > 0
                  ? "no interval: only " + std::to_string(out.runs) + " published " + out.family + " run(s) on " +
                        out.generation + " were checked (" + std::to_string(kMinRuns) + " needed)"
                  : "no published run of the " + out.family + " stack family on " + out.generation +
                        " was checked: no interval";
  return out;
}

Json interval_json(const PredictionInterval& i) {
  Json j{{"available", i.available},
         {"family", i.family},
         {"generation", i.generation},
         {"runs", i.runs},
         {"basis", i.basis}};
  if (i.available) {
    j["level"] = 0.9;
    j["step_time_low_s"] = i.low_s;
    j["step_time_high_s"] = i.high_s;
    j["step_time_centre_s"] = i.centre_s;
  }
  return j;
}

}  // namespace placesim
