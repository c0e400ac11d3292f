#include "strategies/plan/RunPlan.hpp"

#include <cmath>

#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr double kHour = 3600;

std::string watts(double w) {
  return format_grouped(w) + " W";
}

// The rated power of one GPU as the run draws it: its power limit when set, else its rated power (tdp_w).
double gpu_rated_w(const AcceleratorSpec& a) {
  return a.power_limit_w > 0 ? a.power_limit_w : a.tdp_w;
}

// Each GPU's mean draw: the rated (or limited) power x run.gpu_power_fraction.
void resolve_gpu_power(const Experiment& e, const ClusterSpec& c, RunPlan& p) {
  const RunDefaults& d = run_defaults();
  const double rated = gpu_rated_w(c.accelerator);
  p.power_known = rated > 0;
  const double fraction = e.run.gpu_power_fraction.value_or(d.gpu_power_fraction.value);
  p.power.gpu_power_w = rated * fraction;
  p.power_upper_bound = !e.run.gpu_power_fraction;
  const std::string whose = c.accelerator.power_limit_w > 0 ? "the power limit (cluster.accelerator.power_limit_w)"
                                                            : c.accelerator.name + "'s rated power (tdp_w)";
  if (!p.power_known)
    p.assumptions.push_back("the accelerator " + c.accelerator.name +
                            " has no rated power (tdp_w): no energy figures (give cluster.accelerator.tdp_w)");
  else if (!e.run.gpu_power_fraction)
    p.assumptions.push_back("run.gpu_power_fraction not given: " + format_significant(fraction) + " of " + whose +
                            ", " + watts(rated) + " per GPU. " + d.gpu_power_fraction.source);
}

// A node's power beyond its GPUs: the run's, the vendor's system power less its GPUs, or a share of the GPUs' power.
void resolve_node_power(const Experiment& e, const ClusterSpec& c, RunPlan& p) {
  const RunDefaults& d = run_defaults();
  if (e.run.node_power_w) {
    p.power.node_power_w = *e.run.node_power_w;
    return;
  }
  const auto gpus = static_cast<double>(c.gpus_per_node);
  const auto spec = d.node_power.find(c.accelerator.name);
  if (spec != d.node_power.end()) {
    const SystemPower& s = spec->second;
    p.power.node_power_w = (s.system_power_w - s.gpus * s.gpu_power_w) / s.gpus * gpus;
    p.assumptions.push_back("run.node_power_w not given: " + watts(p.power.node_power_w) + " per node of " +
                            std::to_string(c.gpus_per_node) + " GPUs beyond them, " + watts(s.system_power_w) +
                            " maximum system power less " + std::to_string(s.gpus) + " x " + watts(s.gpu_power_w) +
                            (s.gpus == c.gpus_per_node ? "" : ", scaled to the node's GPUs") + ". " + s.source);
    return;
  }
  p.power.node_power_w = d.node_power_fraction.value * gpus * c.accelerator.tdp_w;
  p.assumptions.push_back("run.node_power_w not given: " + watts(p.power.node_power_w) + " per node (" +
                          format_significant(d.node_power_fraction.value) + " x " + std::to_string(c.gpus_per_node) +
                          " x " + watts(c.accelerator.tdp_w) + "): " + d.node_power_fraction.source);
}

std::string rate_text(double per_s) {
  return format_significant(per_s * kHour, 3);
}

// The unit rates: the run's (each unit given replaces its default) or its job MTBF, else the defaults.
void resolve_failures(const Experiment& e, RunPlan& p) {
  const RunSpec& r = e.run;
  const RunDefaults& d = run_defaults();
  if (r.mtbf_s) {
    p.unit_rates = FailureRates{};
    p.rates = JobRates{1 / *r.mtbf_s, 0};
    return;
  }
  const FailureRates base = d.failures.rates();
  std::vector<std::string> taken;
  auto pick = [&](const std::optional<double>& given, double fallback, const char* name) {
    if (given) return *given / kHour;
    taken.push_back(std::string(name) + " " + rate_text(fallback));
    return fallback;
  };
  p.unit_rates.per_gpu_s = pick(r.per_gpu_hour, base.per_gpu_s, "per_gpu_hour");
  p.unit_rates.per_node_s = pick(r.per_node_hour, base.per_node_s, "per_node_hour");
  p.unit_rates.per_link_s = pick(r.per_link_hour, base.per_link_s, "per_link_hour");
  p.unit_rates.planned_per_node_s = pick(r.planned_per_node_hour, base.planned_per_node_s, "planned_per_node_hour");
  p.rates = job_rates(p.unit_rates, p.power.devices, p.power.nodes, p.links);
  if (taken.empty()) return;
  std::string list;
  for (const auto& t : taken) list += (list.empty() ? "" : ", ") + t;
  p.assumptions.push_back("run.failures not given (" + list +
                          " interruptions per unit-hour): each Table 5 cause's count over the unit-hours observed (" +
                          format_grouped(d.failures.gpus) + " GPUs, " + format_grouped(d.failures.nodes) + " nodes, " +
                          format_grouped(d.failures.links) + " links, " + format_grouped(d.failures.hours) + " h). " +
                          d.failures.source);
}

// The checkpoint's size, write, stall, restart and interval.
void resolve_checkpoint(const Experiment& e, const ClusterSpec& c, RunPlan& p) {
  const RunSpec& r = e.run;
  const RunDefaults& d = run_defaults();
  p.checkpoint_bytes = checkpoint_bytes(e);
  p.async = r.async;
  // The default scales with the job: each node's share of a cluster file system's sustained write bandwidth.
  p.write_Bps =
      r.write_bandwidth_Bps.value_or(d.write_bandwidth_per_node_Bps.value * static_cast<double>(p.power.nodes));
  p.host_Bps = r.host_bandwidth_Bps.value_or(c.pcie_bw_Bps);
  const TrainingSpec& t = e.training;
  p.assumptions.push_back(
      "checkpoint: the model states once, " + format_count(total_parameters(e.model)) + " parameters x (" +
      std::to_string(t.held_param_bytes()) + " + " + format_significant(t.optimizer_bytes_per_param) +
      ") bytes = " + format_bytes(p.checkpoint_bytes) +
      " (data-parallel copies written once; gradients, activations and data-loader state left out)");
  p.checkpoint.write_s = p.checkpoint_bytes / p.write_Bps;
  // Async: each GPU copies its share of the checkpoint to host memory over its own link, then the write proceeds.
  p.checkpoint.stall_s =
      p.async ? p.checkpoint_bytes / (static_cast<double>(p.power.devices) * p.host_Bps) : p.checkpoint.write_s;
  p.checkpoint.restart_s = r.restart_s.value_or(d.restart_s.value);
  p.checkpoint.interval_s = r.interval_s;
  if (!r.write_bandwidth_Bps)
    p.assumptions.push_back("run.checkpoint.write_bandwidth not given: " + format_bytes(p.write_Bps) + "/s (" +
                            format_bytes(d.write_bandwidth_per_node_Bps.value) + "/s x " +
                            std::to_string(p.power.nodes) + " nodes). " + d.write_bandwidth_per_node_Bps.source);
  if (p.async && !r.host_bandwidth_Bps)
    p.assumptions.push_back("run.checkpoint.host_bandwidth not given: " + format_bytes(p.host_Bps) + "/s per GPU, " +
                            d.host_bandwidth_source);
  if (!r.restart_s)
    p.assumptions.push_back("run.checkpoint.restart not given: " + format_significant(p.checkpoint.restart_s / 60) +
                            " min. " + d.restart_s.source);
  if (!r.interval_s) p.assumptions.push_back("run.checkpoint.interval not given: auto, " + d.interval_source);
}

}  // namespace

double checkpoint_bytes(const Experiment& e) {
  const TrainingSpec& t = e.training;
  return total_parameters(e.model) * (t.held_param_bytes() + t.optimizer_bytes_per_param);
}

RunPlan run_plan(const Experiment& e, const ClusterSpec& c, double tokens_per_step) {
  const RunDefaults& d = run_defaults();
  RunPlan p;
  p.power.devices = e.strategy.devices();
  p.power.nodes = (p.power.devices + c.gpus_per_node - 1) / c.gpus_per_node;
  p.links = p.power.nodes > 1 ? p.power.nodes * c.nics_per_node : 0;
  p.power.pue = e.run.pue.value_or(d.pue.value);
  p.power.gpu_hour_usd = e.run.gpu_hour_usd;
  if (!e.run.pue)
    p.assumptions.push_back("run.pue not given: " + format_significant(p.power.pue) + ". " + d.pue.source);
  if (!e.run.gpu_hour_usd)
    p.assumptions.push_back("run.gpu_hour_usd not given: no cost figures (placesim has no price list)");
  resolve_gpu_power(e, c, p);
  resolve_node_power(e, c, p);
  resolve_failures(e, p);
  resolve_checkpoint(e, c, p);
  if (e.training.steps > 0) p.steps = e.training.steps;
  if (e.training.tokens > 0 && tokens_per_step > 0) p.steps = steps_for_tokens(e.training.tokens, tokens_per_step);
  if (e.training.tokens > 0 && !(tokens_per_step > 0))
    p.assumptions.push_back("training.tokens=" + format_significant(e.training.tokens) +
                            " cannot become steps: an opaque model (model.parameters) has no tokens per step; give "
                            "training.steps");
  return p;
}

TimeToTrain time_to_train(const Experiment& e, const ClusterSpec& c, double tokens_per_step, const StepTimes& step) {
  TimeToTrain out;
  out.plan = run_plan(e, c, tokens_per_step);
  const RunPlan& p = out.plan;
  if (tokens_per_step > 0) out.per_token = per_token(step.step_s, tokens_per_step, p.power);
  out.goodput = goodput(p.rates, p.checkpoint, p.async);
  if (!p.steps) return out;
  out.totals = totals(*p.steps, step.step_s, tokens_per_step, p.power);
  if (!out.goodput.feasible) return out;
  const auto steps = static_cast<double>(*p.steps);
  out.wall = wall_clock(out.totals->compute_s, steps * step.low_s, steps * step.high_s, out.goodput, p.rates);
  return out;
}

}  // namespace placesim
