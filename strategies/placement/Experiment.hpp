#pragma once
#include <memory>
#include <optional>
#include <string>

#include "strategies/placement/Provenance.hpp"
#include "strategies/placement/Strategy.hpp"
#include "topology/cluster/Cluster.hpp"
#include "workloads/model/Model.hpp"
#include "workloads/model/Training.hpp"
#include "workloads/objective/ConvergenceSpec.hpp"
#include "workloads/run/RunSpec.hpp"
#include "workloads/stack/Stack.hpp"

namespace placesim {

/// A strategy that would train a different model than one device would: names the state, the axis and the rule.
struct InvalidStrategy : InputError {
  using InputError::InputError;
};

/// One experiment: model x training x strategy (x cluster). Parsed at the JSON edge, then resolved: every derived
/// field (micro-batch count, global batch, NOAM, activation placement vs recompute) is filled in.
struct Experiment {
  std::string name = "experiment";
  ModelSpec model;
  TrainingSpec training;
  StrategySpec strategy;
  Json cluster;                    ///< raw "cluster" section, resolved by topology/; null when absent
  Json pipeline;                   ///< raw abstract "pipeline" section; null when absent
  double device_memory_bytes = 0;  ///< capacity to check the memory against; 0 = not checked
  /// "convergence" section: the objective `placesim converge` optimizes with the pipeline's updates; absent when
  /// the experiment has none (the command then uses the ConvergenceSpec defaults).
  std::optional<ConvergenceSpec> convergence;
  /// "run" section: price, power, failures and checkpoints for the time to train (every field optional).
  RunSpec run;
  /// The training stack whose defaults the experiment runs with (null for an experiment built in code, which then
  /// runs with the fields as set) and how it was chosen: "experiment", "preset" or "default".
  std::shared_ptr<const StackSpec> stack;
  std::string stack_from;
  /// Where each training and strategy field came from (empty for an experiment built in code).
  Provenance provenance;
  /// The "calibration" file the experiment names (placesim calibrate --trace), as applied: {"file", "accelerator",
  /// "from_trace": the figures the trace set, "training": the training fields it set}; null when none.
  Json calibration;
};

/// Tokens of one sequence a device holds: model.seq_len / strategy.cp (context parallelism splits the sequence).
inline std::int64_t local_seq_len(const Experiment& e) {
  return e.model.seq_len / e.strategy.cp;
}

/// Parses an experiment object; `base_dir` resolves relative paths (hf_config, calibration). Calls resolve().
/// "calibration": FILE (a profile file with a "training" section, as placesim calibrate --trace writes it) sets the
/// cluster accelerator's profile to the file (cluster.accelerator gains "profile"; the file's accelerator must be
/// the cluster's) and the training fields of its "training" section that the experiment does not write itself.
/// Throws the first error found as an InputError (a sweep's point is refused for one reason).
Experiment parse_experiment(const Json& value, const std::string& base_dir);
/// The sections of `value` read into `e` with every error collected in `errors` (each section's field errors and
/// unknown keys, the cluster section's, parsed into `cluster` when it parsed), then resolve() when the checks across
/// fields may run. True when resolved while errors were found already: the commands' checks then join them
/// (parse_experiment with an ErrorList, strategies/analytic/ExperimentFile.hpp).
bool read_experiment(const Json& value, const std::string& base_dir, ErrorList& errors, Experiment& e,
                     std::optional<ClusterSpec>& cluster);
/// The accelerator the calibration `e` names was measured on is the cluster's: else an InputError naming both.
void check_calibration_accelerator(const Experiment& e, const std::string& cluster_accelerator);
/// Fills the derived fields and checks the batch arithmetic; throws InputError naming the fields.
void resolve(Experiment& e);
/// The experiment as JSON (the resolved form a report echoes).
Json strategy_to_json(const StrategySpec& s);
Json model_to_json(const ModelSpec& m);
/// The loss kernel is echoed only when some origin gave it (else it follows the kernels).
Json training_to_json(const TrainingSpec& t, const Provenance& given = {});

}  // namespace placesim
