#pragma once
#include <optional>

#include "sim/converge/StaleSgd.hpp"
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/pipeline/UpdateLog.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// How long `placesim converge` runs a pipeline: a number of steps, or a simulated-time budget.
struct RunLength {
  int steps = 0;        ///< > 0: exactly this many steps (the budget must then be 0)
  double budget_s = 0;  ///< > 0: everything the pipeline completes within this simulated time
};

/// An abstract pipeline evaluated for the executor.
struct PreparedPipeline {
  AbstractPipeline pipeline;  ///< as evaluated: its shape's steps cover the run length
  Json pipeline_report;       ///< pipeline_json of the evaluated run, plus "times"
  UpdateLog trace;            ///< what the executor runs: the whole run's, or its events up to the budget
  double end_s = 0;           ///< simulated time the trace covers: the makespan, or the budget
};

/// A step count after which every op of `p` that starts before `budget_s` is the op an endless run would have there:
/// stage 0's last forward starts at or after the budget, so no stage has begun draining. Steps are added from 1 by
/// the shortfall over the time per step until that holds, which gives the fewest for pipelines of identical steps.
/// Precondition: budget_s > 0. Throws InputError (naming --time-budget) when that needs more ops than
/// make_schedule accepts.
int steps_for_budget(const AbstractPipeline& p, double budget_s);

/// The events of `trace` that complete within `budget_s` (time_s <= budget_s). Backwards whose Apply falls after
/// the budget stay: the executor accumulates their gradients and never applies them.
UpdateLog cut_log(const UpdateLog& trace, double budget_s);

/// Builds, evaluates and measures `p` for `length` (a budget overrides p.shape.steps), and takes its UpdateLog.
PreparedPipeline prepare_pipeline(AbstractPipeline p, const RunLength& length);

/// The `placesim converge` report: {"pipeline": <report>, "convergence": convergence_summary + "best_loss",
/// "staleness": delays of the executed trace (see update_delays), "run": {"steps", "budget_s", "end_s"}}.
Json converge_report(const PreparedPipeline& prepared, const RunLength& length, const ConvergenceResult& result);

/// Two-line human summary of a converge report.
std::string converge_summary_text(const Json& report);

}  // namespace placesim
