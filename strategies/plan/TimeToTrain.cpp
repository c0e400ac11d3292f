#include "strategies/plan/TimeToTrain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

constexpr double kHour = 3600;
// Above this mean the Poisson quantile takes the normal approximation (its probabilities, e^-mean, underflow near
// 745; at 500 the approximation is off by at most one count).
constexpr double kExactPoissonMean = 500;

// The standard normal's p-quantile, by bisection of its distribution function 0.5 erfc(-z / sqrt 2).
double normal_quantile(double p) {
  double low = -40, high = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (low + high) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? low : high) = mid;
  }
  return (low + high) / 2;
}

std::string hours_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g h", s / kHour);
  return text;
}

// The interval of compute between checkpoints: the user's, or Daly's optimum for the unplanned MTBF (none when there
// are no unplanned interruptions), at least the write under async.
std::optional<double> chosen_interval(const JobRates& rates, const CheckpointCosts& c, bool async) {
  if (c.interval_s) return c.interval_s;
  if (!(rates.unplanned_per_s > 0)) return std::nullopt;
  const double tau = daly_interval_s(c.stall_s, 1 / rates.unplanned_per_s);
  return async ? std::max(tau, c.write_s) : tau;
}

}  // namespace

double PowerInputs::facility_power_w() const {
  return pue * (static_cast<double>(devices) * gpu_power_w + static_cast<double>(nodes) * node_power_w);
}

PerToken per_token(double step_s, double tokens_per_step, const PowerInputs& p) {
  PerToken out;
  out.energy_j = step_s * p.facility_power_w() / tokens_per_step;
  if (p.gpu_hour_usd)
    out.cost_per_million_usd =
        step_s * static_cast<double>(p.devices) * (*p.gpu_hour_usd / kHour) * 1e6 / tokens_per_step;
  return out;
}

std::int64_t steps_for_tokens(double tokens, double tokens_per_step) {
  return static_cast<std::int64_t>(std::ceil(tokens / tokens_per_step));
}

Totals totals(std::int64_t steps, double step_s, double tokens_per_step, const PowerInputs& p) {
  Totals t;
  t.steps = steps;
  t.tokens = static_cast<double>(steps) * tokens_per_step;
  t.compute_s = static_cast<double>(steps) * step_s;
  t.gpu_hours = t.compute_s * static_cast<double>(p.devices) / kHour;
  t.energy_j = t.compute_s * p.facility_power_w();
  if (p.gpu_hour_usd) t.cost_usd = t.gpu_hours * *p.gpu_hour_usd;
  return t;
}

JobRates job_rates(const FailureRates& r, std::int64_t gpus, std::int64_t nodes, std::int64_t links) {
  JobRates out;
  out.unplanned_per_s = r.per_gpu_s * static_cast<double>(gpus) + r.per_node_s * static_cast<double>(nodes) +
                        r.per_link_s * static_cast<double>(links);
  out.planned_per_s = r.planned_per_node_s * static_cast<double>(nodes);
  return out;
}

double young_interval_s(double delta_s, double mtbf_s) {
  return std::sqrt(2 * delta_s * mtbf_s);
}

double daly_interval_s(double delta_s, double mtbf_s) {
  if (delta_s >= 2 * mtbf_s) return mtbf_s;
  const double x = delta_s / (2 * mtbf_s);
  return std::sqrt(2 * delta_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - delta_s;
}

Goodput goodput(const JobRates& rates, const CheckpointCosts& c, bool async) {
  Goodput g;
  g.interval_auto = !c.interval_s.has_value();
  g.interval_s = chosen_interval(rates, c, async);
  const double tau = g.interval_s.value_or(std::numeric_limits<double>::infinity());
  g.work_factor = g.interval_s ? 1 + c.stall_s / tau : 1;
  g.loss_unplanned_s = c.restart_s + (g.interval_s ? (tau + c.stall_s) / 2 : 0) + (async ? c.write_s : 0);
  g.loss_planned_s = c.restart_s + c.write_s;
  g.lost_fraction = rates.unplanned_per_s * g.loss_unplanned_s + rates.planned_per_s * g.loss_planned_s;
  const double total = rates.total_per_s();
  g.mean_loss_s = total > 0 ? g.lost_fraction / total : 0;
  if (g.lost_fraction >= 1) {
    g.feasible = false;
    g.goodput = 0;
    g.refused =
        "the job is interrupted every " + hours_text(1 / total) + " on average and loses " + hours_text(g.mean_loss_s) +
        " each time (restart " + format_significant(c.restart_s, 4) + " s" +
        (g.interval_s ? ", plus half of the " + format_significant(tau, 4) + " s between checkpoints" : std::string()) +
        "): it loses work faster than it makes progress and never finishes. Checkpoint more often "
        "(run.checkpoint.interval), restart faster (run.checkpoint.restart) or check run.failures";
    return g;
  }
  g.goodput = (1 - g.lost_fraction) / g.work_factor;
  return g;
}

std::int64_t poisson_quantile(double mean, double p) {
  if (!(mean > 0)) return 0;
  if (mean > kExactPoissonMean) {
    const double k = std::ceil(mean + normal_quantile(p) * std::sqrt(mean) - 0.5);
    return static_cast<std::int64_t>(std::max(0.0, k));
  }
  double pmf = std::exp(-mean), cdf = pmf;
  std::int64_t k = 0;
  while (cdf < p) {
    ++k;
    pmf *= mean / static_cast<double>(k);
    cdf += pmf;
  }
  return k;
}

WallClock wall_clock(double useful_s, double useful_low_s, double useful_high_s, const Goodput& g,
                     const JobRates& rates) {
  const double keep = 1 - g.lost_fraction;
  auto expected = [&](double useful) { return useful * g.work_factor / keep; };
  WallClock w;
  w.expected_s = expected(useful_s);
  w.expected_failures = w.expected_s * rates.total_per_s();
  w.failures_low = poisson_quantile(w.expected_failures, 0.05);
  w.failures_high = poisson_quantile(w.expected_failures, 0.95);
  const auto low_count = poisson_quantile(expected(useful_low_s) * rates.total_per_s(), 0.05);
  const auto high_count = poisson_quantile(expected(useful_high_s) * rates.total_per_s(), 0.95);
  w.low_s = useful_low_s * g.work_factor + static_cast<double>(low_count) * g.mean_loss_s;
  w.high_s = useful_high_s * g.work_factor + static_cast<double>(high_count) * g.mean_loss_s;
  return w;
}

std::string format_grouped(double v) {
  std::string digits = std::to_string(std::llround(v));
  for (int i = static_cast<int>(digits.size()) - 3; i > (digits[0] == '-' ? 1 : 0); i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

std::string format_count(double v) {
  return format_scaled(v, {{1e12, 1e12, "%.3g T"}, {1e9, 1e9, "%.3g B"}, {1e6, 1e6, "%.3g M"}, {0, 1, "%.0f"}});
}

}  // namespace placesim
