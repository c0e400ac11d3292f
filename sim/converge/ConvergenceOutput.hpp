#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "sim/converge/StaleSgd.hpp"
#include "traces/svg/SvgPlot.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// CSV with the header `updates,time_s,loss,grad_norm` and one row per point, numbers in their shortest exact form
/// ("inf" / "nan" for a diverged point).
void write_convergence_csv(std::ostream& out, const ConvergenceResult& result);

/// One JSON object per line and point: {"updates", "time_s", "loss", "grad_norm"} plus the members of `extra`
/// (labels of a sweep point, say; a point's own keys win). Keys sorted; a non-finite number becomes null.
void write_convergence_jsonl(std::ostream& out, const ConvergenceResult& result, const Json& extra = Json::object());

/// The figures a report or a sweep row needs: objective, dimension, stages, replicas, step_size, sample_every,
/// updates, backwards, diverged, initial_loss, final_loss, min_loss, final_grad_norm, final_time_s,
/// peak_versions (per stage).
Json convergence_summary(const ConvergenceResult& result);

/// The loss against simulated time, as one line of a plot.
PlotSeries loss_series(const ConvergenceResult& result, std::string label);

/// SVG of loss against simulated time for one or more runs (a legend names them by label). The loss axis is
/// logarithmic when every finite loss is positive, else linear.
std::string convergence_svg(const std::vector<PlotSeries>& series, const std::string& title);
std::string convergence_svg(const ConvergenceResult& result, const std::string& title);

}  // namespace placesim
