#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strategies/placement/Experiment.hpp"
#include "strategies/plan/TimeToTrain.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// An experiment's run section resolved against its cluster and the built-in defaults (workloads/run/defaults.json):
/// the inputs of TimeToTrain.hpp's functions, and a sentence for every default it took.
struct RunPlan {
  PowerInputs power;              ///< gpu_power_w 0 when the accelerator's rated power is unknown
  bool power_known = true;        ///< the accelerator has a rated power (tdp_w), so energy figures exist
  bool power_upper_bound = true;  ///< the GPUs' draw is their rated power (run.gpu_power_fraction not given)
  std::int64_t links = 0;         ///< the job's inter-node links: nodes x nics_per_node when it spans nodes
  FailureRates unit_rates;        ///< per unit (replaced by the job's MTBF when given)
  JobRates rates;                 ///< the job's
  CheckpointCosts checkpoint;
  bool async = false;
  double checkpoint_bytes = 0;
  double write_Bps = 0;               ///< aggregate, to storage
  double host_Bps = 0;                ///< per GPU, to host memory (async)
  std::optional<std::int64_t> steps;  ///< from training.steps or training.tokens
  std::vector<std::string> assumptions;
};

/// The bytes a checkpoint writes: the model states once (data-parallel replicas hold copies of the same shards, so
/// each shard is written once): total parameters x (the bytes of a held parameter + optimizer state per parameter),
/// e.g. 2 + 12 for bf16 with Adam's fp32 master weights and moments. Gradients, activations and the data loader's
/// state are left out. Taken from the model and training dtypes rather than summed over the devices' analytic
/// memory: it is the same sum without the replicas' copies, and exact for any placement.
double checkpoint_bytes(const Experiment& e);

/// Resolves the run section of `e` on cluster `c`; `tokens_per_step` > 0 turns training.tokens into steps (0, an
/// opaque model's, leaves them unknown and says so).
RunPlan run_plan(const Experiment& e, const ClusterSpec& c, double tokens_per_step);

/// One step's time and its 90 % interval (low = high = step_s without one).
struct StepTimes {
  double step_s = 0, low_s = 0, high_s = 0;
};

/// The time to train, energy, cost and goodput of a run of the experiment.
struct TimeToTrain {
  RunPlan plan;
  std::optional<PerToken> per_token;  ///< when a step has tokens (an opaque model's has none)
  std::optional<Totals> totals;       ///< when steps are known
  Goodput goodput;
  std::optional<WallClock> wall;  ///< when steps are known and the goodput is feasible
};

TimeToTrain time_to_train(const Experiment& e, const ClusterSpec& c, double tokens_per_step, const StepTimes& step);

}  // namespace placesim
