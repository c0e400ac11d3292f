#pragma once
#include <map>
#include <string>
#include <vector>

#include "sim/verify/Executor.hpp"
#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// The experiment the checker and the analytic model see for an executor run: the tiny MLP as an opaque model of
/// `layers` units of 30 parameters, micro-batches of 2 samples, the spec's strategy. Resolved.
Experiment miniature_experiment(const ExecutorSpec& spec);

/// An experiment shrunk to what the executor runs, and what was changed to get there.
struct Miniature {
  ExecutorSpec spec;
  std::vector<std::string> changes;  ///< "strategy.tp 8 -> 1 (...)", one line per change
};
/// The miniature of `e`: the same placement, schedule and FSDP options on dp_shard (with cp) and dp_replicate of
/// at most 2 each (1 under an asynchronous schedule), pp of at most 4 and at most 2 chunks, tp = cp = ep = 1, 2 layers
/// per virtual stage, 2 x pp micro-batches, 3 steps (6 asynchronous).
Miniature miniature_of(const Experiment& e);

/// Rules that say a placement is not well-formed rather than that it trains another model: the executor has no
/// layout to run it with (and reports the placement as not executed, with the rule as reason).
bool composition_rule(const std::string& rule, const StrategySpec& s);

/// One placement judged twice: by the checker (check_validity on the miniature, `disabled_rule` switched off) and by
/// execution against one device.
struct Judgement {
  bool checker_valid = false;
  std::string checker_message;  ///< the refusal, empty when valid
  std::string rule;             ///< the rule it cites
  bool equivalent = true;       ///< training_equivalence: false for asynchronous schedules
  bool executed = false;
  std::string not_executed;  ///< why not, when not executed
  ExecutorResult result;
  /// Checker and execution say the same: valid and equivalent <=> the run equals one device; and under an
  /// asynchronous schedule the run equals the stale replay of the schedule's delays.
  bool agree = false;
};
Judgement judge(const ExecutorSpec& spec, const std::string& disabled_rule = "");

/// Counts of the exhaustive run (bench/placement_agreement, tests/test_verify).
struct AgreementCounts {
  std::int64_t placements = 0;  ///< judged by the checker
  std::int64_t executed = 0, agreed = 0, valid = 0, refused = 0;
  std::map<std::string, std::int64_t> refused_by_rule;  ///< executed and refused, by rule
  std::map<std::string, std::int64_t> not_executed;     ///< reason -> count
  std::vector<std::string> disagreements;               ///< the first 20, described
  std::int64_t disagreed = 0;
  double worst_valid_deviation = 0;        ///< the largest deviation of a valid placement (<= tolerance when agreeing)
  double least_refused_deviation = 1e300;  ///< the smallest largest-deviation of a refused one
  /// Valid placements whose executed traffic or resident elements differ from the analytic model's.
  std::int64_t analytic_mismatches = 0;
};
/// Judges every placement of `placements` on `base` (its strategy's placement replaced), `disabled_rule` switched
/// off in the checker.
AgreementCounts agreement(const ExecutorSpec& base, const std::vector<Placement>& placements,
                          const std::string& disabled_rule = "");
/// The parser's refusal of activations placed differently along the two data axes (one message per mode pair;
/// the other states cannot change it). Pairs of equal modes are absent.
std::map<std::string, std::string> split_activation_refusals();

/// Elements the analytic model counts per step on one device of each stage, in the executor's terms.
std::vector<ExecutedTraffic> analytic_traffic(const Experiment& miniature);
/// Elements of parameters, gradients and optimizer state the analytic memory gives one device of each stage.
std::vector<std::array<double, 3>> analytic_resident(const Experiment& miniature);
/// The executed traffic and resident elements equal the analytic ones, stage by stage (synchronous runs).
bool matches_analytic(const ExecutorResult& r, const Experiment& miniature);

}  // namespace placesim
