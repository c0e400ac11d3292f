#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "workloads/run/RunSpec.hpp"

namespace placesim {

/// From one training step to a training run: days, GPU-hours, energy, cost, and the goodput left after
/// interruptions and checkpoints. Pure arithmetic on SI units (seconds, watts, joules, bytes); no I/O.
///
/// Goodput model (a job of useful compute time U_0, checkpointed every tau seconds of compute):
///   each checkpoint stalls training delta seconds (the write, or with async only the copy to host memory), so
///   U = U_0 (1 + delta / tau) of work happens between interruptions;
///   an unplanned interruption loses on average half a segment, (tau + delta) / 2, plus the restart R, plus with
///   async the write time W (the newest checkpoint is durable only W after its copy); a planned stop checkpoints
///   first and loses R + W;
///   with rates lambda_u (unplanned) and lambda_p (planned) per second, the expected wall time is
///   T = U / (1 - (lambda_u L_u + lambda_p L_p)), each interruption costing its mean loss; goodput = U_0 / T.
/// The denominator at or below zero means the job loses work faster than it makes progress: refused.

/// The cluster's power and price for a job.
struct PowerInputs {
  std::int64_t devices = 0;  ///< the job's GPUs
  std::int64_t nodes = 0;    ///< the nodes they occupy
  double gpu_power_w = 0;    ///< each GPU's mean draw, watts
  double node_power_w = 0;   ///< each node beyond its GPUs, watts
  double pue = 1;            ///< facility power / IT power
  std::optional<double> gpu_hour_usd;
  /// Facility power of the job: pue x (devices x gpu_power_w + nodes x node_power_w).
  double facility_power_w() const;
};

struct PerToken {
  double energy_j = 0;                         ///< step time x facility power / tokens per step
  std::optional<double> cost_per_million_usd;  ///< step time x devices x price per GPU-second x 1e6 / tokens per step
};

/// Energy and cost of one token; `tokens_per_step` > 0.
PerToken per_token(double step_s, double tokens_per_step, const PowerInputs& p);

/// steps = ceil(tokens / tokens_per_step).
std::int64_t steps_for_tokens(double tokens, double tokens_per_step);

/// A run of `steps` steps without interruptions.
struct Totals {
  std::int64_t steps = 0;
  double tokens = 0;
  double compute_s = 0;  ///< steps x step time
  double gpu_hours = 0;  ///< compute_s x devices / 3600
  double energy_j = 0;   ///< compute_s x facility power
  std::optional<double> cost_usd;
};

Totals totals(std::int64_t steps, double step_s, double tokens_per_step, const PowerInputs& p);

/// The job's interruptions per second: each unit's rate times the job's units of it.
struct JobRates {
  double unplanned_per_s = 0, planned_per_s = 0;
  double total_per_s() const { return unplanned_per_s + planned_per_s; }
};

/// `links`: the job's inter-node links (0 on one node).
JobRates job_rates(const FailureRates& r, std::int64_t gpus, std::int64_t nodes, std::int64_t links);

/// Young's (1974) optimum interval of compute between checkpoints: sqrt(2 delta M).
double young_interval_s(double delta_s, double mtbf_s);
/// Daly's (2006) higher-order optimum: sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta for
/// delta < 2M, else M.
double daly_interval_s(double delta_s, double mtbf_s);

/// What a checkpoint and a restart cost.
struct CheckpointCosts {
  double stall_s = 0;                ///< training stops this long per checkpoint
  double write_s = 0;                ///< until the checkpoint is durable (= stall_s unless async)
  double restart_s = 0;              ///< from an interruption to training again
  std::optional<double> interval_s;  ///< compute between checkpoints; none: Daly's optimum
};

struct Goodput {
  bool feasible = true;
  std::string refused;               ///< why not, when not feasible
  std::optional<double> interval_s;  ///< none: no checkpoints needed (no unplanned interruptions, auto interval)
  bool interval_auto = true;
  double goodput = 1;           ///< useful compute / wall time
  double loss_unplanned_s = 0;  ///< L_u
  double loss_planned_s = 0;    ///< L_p
  double mean_loss_s = 0;       ///< per interruption, weighted by the rates
  double work_factor = 1;       ///< 1 + delta / tau
  double lost_fraction = 0;     ///< lambda_u L_u + lambda_p L_p
};

/// The goodput of a job with these rates and checkpoint costs (see the model above). An auto interval is Daly's
/// optimum for the unplanned interruptions' MTBF, and at least the write time under async (one write at a time).
Goodput goodput(const JobRates& rates, const CheckpointCosts& costs, bool async);

/// The p-quantile of a Poisson count of mean `mean`: the smallest k with P(N <= k) >= p. Exact (summing the
/// distribution) for means up to 500, the normal approximation with continuity correction above.
std::int64_t poisson_quantile(double mean, double p);

/// The wall-clock time of a run with interruptions.
struct WallClock {
  double expected_s = 0;           ///< U / (1 - lost_fraction)
  double expected_failures = 0;    ///< expected_s x the job's interruption rate
  std::int64_t failures_low = 0;   ///< 5th percentile of Poisson(expected_failures)
  std::int64_t failures_high = 0;  ///< 95th percentile
  double low_s = 0, high_s = 0;    ///< the 90 % range (see wall_clock)
};

/// The run's wall clock from its useful compute time, with the 90 % range combining the step time's interval
/// (`useful_low_s`, `useful_high_s`; equal to `useful_s` without one) and the Poisson spread of the interruption
/// count: low = U_low + k_05 x mean loss, where k_05 is the 5th percentile of Poisson(lambda T_low) and T_low the
/// expected wall time at the low step time; high alike with the 95th percentile. Each interruption is taken at its
/// mean loss (the uniform position within a segment averages out). Needs g.feasible.
WallClock wall_clock(double useful_s, double useful_low_s, double useful_high_s, const Goodput& g,
                     const JobRates& rates);

/// An integer with thousands separators: "238,419" (rounded to the nearest).
std::string format_grouped(double v);
/// A count with its scale: "15.6 T", "405 B", "32.2 M", or "950" below a million.
std::string format_count(double v);

}  // namespace placesim
