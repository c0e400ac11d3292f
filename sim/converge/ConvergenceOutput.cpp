#include "sim/converge/ConvergenceOutput.hpp"

#include <algorithm>
#include <cmath>

namespace placesim {

namespace {

Json finite_or_null(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

}  // namespace

void write_convergence_csv(std::ostream& out, const ConvergenceResult& result) {
  out << "updates,time_s,loss,grad_norm\n";
  for (const ConvergencePoint& p : result.points)
    out << p.updates << ',' << format_shortest(p.time_s) << ',' << format_shortest(p.loss) << ','
        << format_shortest(p.grad_norm) << '\n';
}

void write_convergence_jsonl(std::ostream& out, const ConvergenceResult& result, const Json& extra) {
  for (const ConvergencePoint& p : result.points) {
    Json row = extra.is_object() ? extra : Json::object();
    row["updates"] = p.updates;
    row["time_s"] = finite_or_null(p.time_s);
    row["loss"] = finite_or_null(p.loss);
    row["grad_norm"] = finite_or_null(p.grad_norm);
    out << row.dump() << '\n';
  }
}

Json convergence_summary(const ConvergenceResult& result) {
  Json j = Json::object();
  j["objective"] = result.objective;
  j["dimension"] = result.dimension;
  j["stages"] = result.stages;
  j["replicas"] = result.replicas;
  j["step_size"] = result.step_size;
  j["sample_every"] = result.sample_every;
  j["updates"] = result.updates;
  j["backwards"] = result.backwards;
  j["diverged"] = result.diverged;
  double lowest = INFINITY;
  for (const ConvergencePoint& p : result.points)
    if (std::isfinite(p.loss)) lowest = std::min(lowest, p.loss);
  const bool any = !result.points.empty();
  j["initial_loss"] = any ? finite_or_null(result.points.front().loss) : Json(nullptr);
  j["final_loss"] = any ? finite_or_null(result.points.back().loss) : Json(nullptr);
  j["min_loss"] = finite_or_null(lowest);
  j["final_grad_norm"] = any ? finite_or_null(result.points.back().grad_norm) : Json(nullptr);
  j["final_time_s"] = any ? result.points.back().time_s : 0.0;
  j["peak_versions"] = result.peak_versions;
  return j;
}

PlotSeries loss_series(const ConvergenceResult& result, std::string label) {
  PlotSeries s{std::move(label), {}, {}};
  for (const ConvergencePoint& p : result.points) {
    s.x.push_back(p.time_s);
    s.y.push_back(p.loss);
  }
  return s;
}

std::string convergence_svg(const std::vector<PlotSeries>& series, const std::string& title) {
  bool positive = true;
  for (const PlotSeries& s : series)
    for (double y : s.y) positive = positive && (!std::isfinite(y) || y > 0);
  PlotOptions options{title, "simulated time (s)", "loss", positive};
  return render_line_plot(series, options);
}

std::string convergence_svg(const ConvergenceResult& result, const std::string& title) {
  return convergence_svg({loss_series(result, "")}, title);
}

}  // namespace placesim
