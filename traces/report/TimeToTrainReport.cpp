#include "traces/report/TimeToTrainReport.hpp"

#include <cmath>
#include <cstdio>

#include "traces/report/Interval.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/SimReport.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr double kHour = 3600, kDay = 86400, kJoulesPerKwh = 3.6e6;

Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// Energy figures exist only when the accelerator's rated power is known.
Json energy_json(const RunPlan& p, double joules, double per) {
  return p.power_known ? Json(joules / per) : Json(nullptr);
}

std::string interval_from(const Goodput& g) {
  if (!g.interval_s) return "none: no unplanned interruptions";
  return g.interval_auto ? "Daly (2006) optimum" : "run.checkpoint.interval";
}

std::string energy_note(const RunPlan& p) {
  return p.power_upper_bound ? "an upper bound, every GPU at its rated power throughout (GPUs draw less on "
                               "average; set run.gpu_power_fraction to a measured mean draw)"
                             : "the GPUs at run.gpu_power_fraction of their rated power";
}

Json power_json(const RunPlan& p) {
  return Json{{"devices", p.power.devices},
              {"nodes", p.power.nodes},
              {"gpu_w", p.power.gpu_power_w},
              {"node_w", p.power.node_power_w},
              {"pue", p.power.pue},
              {"facility_w", p.power.facility_power_w()},
              {"gpu_hour_usd", optional_json(p.power.gpu_hour_usd)}};
}

void put_goodput(Json& j, const TimeToTrain& t) {
  const RunPlan& p = t.plan;
  const Goodput& g = t.goodput;
  j["goodput"] = g.feasible ? Json(g.goodput) : Json(nullptr);
  if (!g.feasible) j["refused"] = g.refused;
  const double rate = p.rates.total_per_s();
  j["mtbf_hours"] = rate > 0 ? Json(1 / rate / kHour) : Json(nullptr);
  j["mtbf_unplanned_hours"] = p.rates.unplanned_per_s > 0 ? Json(1 / p.rates.unplanned_per_s / kHour) : Json(nullptr);
  j["checkpoint_interval_s"] = optional_json(g.interval_s);
  j["checkpoint_interval_from"] = interval_from(g);
  j["checkpoint_bytes"] = number(p.checkpoint_bytes);
  j["checkpoint_write_s"] = p.checkpoint.write_s;
  j["checkpoint_stall_s"] = p.checkpoint.stall_s;
  j["checkpoint_async"] = p.async;
  j["restart_s"] = p.checkpoint.restart_s;
  j["loss_per_interruption_s"] = g.mean_loss_s;
}

// The run's totals; null where the run's length (training.tokens or training.steps), a price, a rated GPU power or
// a feasible goodput is missing, so that every key is there for a sweep to read.
void put_totals(Json& j, const TimeToTrain& t) {
  const RunPlan& p = t.plan;
  const std::optional<Totals>& tot = t.totals;
  const std::optional<WallClock>& w = t.wall;
  auto when = [](bool known, auto value) { return known ? Json(value) : Json(nullptr); };
  j["steps"] = when(tot.has_value(), tot ? tot->steps : 0);
  j["tokens"] = when(tot.has_value(), tot ? tot->tokens : 0);
  j["days"] = when(tot.has_value(), tot ? tot->compute_s / kDay : 0);
  j["gpu_hours"] = when(tot.has_value(), tot ? tot->gpu_hours : 0);
  j["energy_kwh"] = tot ? energy_json(p, tot->energy_j, kJoulesPerKwh) : Json(nullptr);
  j["energy_mwh"] = tot ? energy_json(p, tot->energy_j, 1e3 * kJoulesPerKwh) : Json(nullptr);
  j["cost_usd"] = tot ? optional_json(tot->cost_usd) : Json(nullptr);
  j["days_with_failures"] = when(w.has_value(), w ? w->expected_s / kDay : 0);
  j["days_with_failures_low"] = when(w.has_value(), w ? w->low_s / kDay : 0);
  j["days_with_failures_high"] = when(w.has_value(), w ? w->high_s / kDay : 0);
  j["expected_failures"] = when(w.has_value(), w ? w->expected_failures : 0);
  j["failures_low"] = when(w.has_value(), w ? w->failures_low : 0);
  j["failures_high"] = when(w.has_value(), w ? w->failures_high : 0);
  const double wall_gpu_hours = w ? w->expected_s * static_cast<double>(p.power.devices) / kHour : 0;
  j["gpu_hours_with_failures"] = when(w.has_value(), wall_gpu_hours);
  j["energy_with_failures_kwh"] =
      w ? energy_json(p, w->expected_s * p.power.facility_power_w(), kJoulesPerKwh) : Json(nullptr);
  j["cost_with_failures_usd"] = when(w && p.power.gpu_hour_usd, wall_gpu_hours * p.power.gpu_hour_usd.value_or(0));
}

std::string usd(double v) {
  return "$" + (v >= 1e6   ? format_significant(v / 1e6, 3) + " M"
                : v >= 100 ? format_grouped(v)
                           : format_significant(v, 3));
}

// The unit a duration reads best in: days from two days, hours from two hours, minutes from two minutes, else
// seconds.
struct DurationUnit {
  double seconds;
  const char* name;
};

DurationUnit duration_unit(double s) {
  if (s >= 2 * kDay) return {kDay, "days"};
  if (s >= 2 * kHour) return {kHour, "h"};
  if (s >= 120) return {60, "min"};
  return {1, "s"};
}

// The number of `unit`s in `s`: one decimal for days, three significant digits otherwise.
std::string number_in(double s, const DurationUnit& unit) {
  const double v = s / unit.seconds;
  char text[40];
  std::snprintf(text, sizeof text, unit.seconds == kDay ? "%.1f" : "%.3g", v);
  return text;
}

std::string duration_text(double s) {
  const DurationUnit unit = duration_unit(s);
  return number_in(s, unit) + " " + unit.name;
}

std::string mwh(double joules) {
  const double kwh = joules / kJoulesPerKwh;
  return kwh >= 1000 ? format_grouped(kwh / 1000) + " MWh" : format_significant(kwh, 3) + " kWh";
}

std::string time_line(const TimeToTrain& t) {
  if (!t.totals)
    return t.per_token ? "no training.tokens or training.steps given: per-token figures only"
                       : "no training.steps given (an opaque model has no tokens per step for training.tokens)";
  const Totals& tot = *t.totals;
  const std::string out = duration_text(tot.compute_s) + " of compute (" +
                          (t.per_token ? format_count(tot.tokens) + " tokens, " : std::string()) +
                          format_grouped(static_cast<double>(tot.steps)) + " steps)";
  if (!t.wall) return out + "; with failures: refused (see goodput)";
  // The range in the expected time's unit.
  const WallClock& w = *t.wall;
  const DurationUnit unit = duration_unit(w.expected_s);
  return out + ", " + duration_text(w.expected_s) + " with failures (90 %: " + number_in(w.low_s, unit) + " to " +
         number_in(w.high_s, unit) + " " + unit.name + ")";
}

std::string goodput_line(const TimeToTrain& t) {
  const Goodput& g = t.goodput;
  const RunPlan& p = t.plan;
  if (!g.feasible) return "refused: " + g.refused;
  char text[96];
  std::snprintf(text, sizeof text, "%.1f %% (", 100 * g.goodput);
  std::string out = text;
  out += g.interval_s ? "checkpoint every " + duration_text(*g.interval_s) + ", " +
                            (g.interval_auto ? "Daly's optimum" : "run.checkpoint.interval")
                      : "no checkpoints needed";
  out += "; " + format_bytes(p.checkpoint_bytes) + " written in " + duration_text(p.checkpoint.write_s) +
         (p.async ? ", training stalled " + duration_text(p.checkpoint.stall_s) + " (async)" : "") + "; restart " +
         duration_text(p.checkpoint.restart_s);
  const double rate = p.rates.total_per_s();
  if (rate > 0)
    out += "; " + (t.wall ? format_grouped(t.wall->expected_failures) + " expected interruptions, " : std::string()) +
           "1 interruption per " + duration_text(1 / rate);
  return out + ")";
}

std::string energy_line(const TimeToTrain& t) {
  const RunPlan& p = t.plan;
  if (!p.power_known) return "unknown: the accelerator has no rated power (tdp_w)";
  std::string out;
  if (t.totals && t.wall)
    out = mwh(t.wall->expected_s * p.power.facility_power_w()) + " with failures (" + mwh(t.totals->energy_j) +
          " of compute), ";
  else if (t.totals)
    out = mwh(t.totals->energy_j) + " of compute, ";
  if (t.per_token) out += format_significant(t.per_token->energy_j, 3) + " J per token, ";
  return out + "at " + format_grouped(static_cast<double>(p.power.devices)) + " GPUs x " +
         format_grouped(p.power.gpu_power_w) + " W + " + format_grouped(static_cast<double>(p.power.nodes)) +
         " nodes x " + format_grouped(p.power.node_power_w) + " W, PUE " + format_significant(p.power.pue, 3) + ": " +
         energy_note(p);
}

std::string cost_line(const TimeToTrain& t) {
  const RunPlan& p = t.plan;
  if (!p.power.gpu_hour_usd) return "no price given (run.gpu_hour_usd)";
  std::string out;
  if (t.totals) {
    const std::string compute = usd(*t.totals->cost_usd) + " of compute: " + format_count(t.totals->gpu_hours) +
                                " GPU-hours at " + usd(*p.power.gpu_hour_usd) + " / GPU-hour";
    out = t.wall ? usd(t.wall->expected_s * static_cast<double>(p.power.devices) / kHour * *p.power.gpu_hour_usd) +
                       " with failures (" + compute + "), "
                 : compute + ", ";
  }
  if (!t.per_token)
    return out.empty() ? "no tokens per step (an opaque model): no cost per token" : out.substr(0, out.size() - 2);
  return out + usd(*t.per_token->cost_per_million_usd) + " per million tokens";
}

}  // namespace

TimeToTrain step_time_to_train(const SimulatedStep& s) {
  const double step = s.figures.step_time_s;
  const PredictionInterval i = prediction_interval(s.experiment, s.cluster.accelerator, step);
  const StepTimes times{step, i.available ? i.low_s : step, i.available ? i.high_s : step};
  TimeToTrain t = time_to_train(s.experiment, s.cluster, s.analysis.tokens_per_step, times);
  if (t.totals)
    t.plan.assumptions.push_back(
        "days with failures: the 90 % range is " +
        (i.available ? "the step time's interval (" + i.basis + ") combined with " : std::string()) +
        "the Poisson spread of the interruption count (its 5th and 95th percentiles), each interruption at its mean "
        "loss" +
        (i.available ? std::string() : "; the step time has no interval (" + i.basis + ")"));
  return t;
}

Json time_to_train_json(const TimeToTrain& t) {
  const RunPlan& p = t.plan;
  Json j = Json::object();
  const std::optional<PerToken>& token = t.per_token;
  j["energy_per_token_j"] = token && p.power_known ? Json(token->energy_j) : Json(nullptr);
  j["cost_per_million_tokens_usd"] = token ? optional_json(token->cost_per_million_usd) : Json(nullptr);
  j["power"] = power_json(p);
  j["energy_note"] = p.power_known ? energy_note(p) : "no rated GPU power (tdp_w): no energy figures";
  put_goodput(j, t);
  put_totals(j, t);
  if (!t.totals) j["length"] = "not given (training.tokens or training.steps): per-token figures only";
  j["assumptions"] = p.assumptions;
  return j;
}

std::string time_to_train_summary(const TimeToTrain& t) {
  return "  time to train        " + time_line(t) + "\n  goodput              " + goodput_line(t) +
         "\n  energy               " + energy_line(t) + "\n  cost                 " + cost_line(t) + "\n";
}

}  // namespace placesim
