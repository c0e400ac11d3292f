#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/converge/Objectives.hpp"
#include "strategies/pipeline/UpdateLog.hpp"
#include "workloads/objective/ConvergenceSpec.hpp"

namespace placesim {

/// One sample of an execution, taken right after an Apply (or before the first event).
struct ConvergencePoint {
  std::int64_t updates = 0;  ///< Apply events executed so far, over all stages and replicas
  double time_s = 0;         ///< simulated completion time of that Apply; 0 for the initial point
  double loss = 0;           ///< full objective at the current model (every block at its newest version),
                             ///< averaged over replicas coordinate by coordinate
  double grad_norm = 0;      ///< Euclidean norm of the full objective's gradient at that model
};

struct ConvergenceResult {
  std::string objective;
  int dimension = 0, stages = 0, replicas = 0;
  double step_size = 0;
  std::int64_t sample_every = 0;         ///< the interval actually used (automatic choice resolved)
  std::vector<ConvergencePoint> points;  ///< the initial point, every sample_every-th Apply, and the last Apply
  std::int64_t updates = 0;              ///< Apply events executed
  std::int64_t backwards = 0;            ///< Backward events executed
  /// A sampled loss or gradient norm was not finite, or |loss| exceeded 1e12 x max(1, |initial loss|): execution
  /// stopped at that point, which is the last one.
  bool diverged = false;
  std::vector<int> peak_versions;  ///< per stage: most versions of one block held at once, the newest included
  std::vector<std::vector<double>> final_weights;  ///< per replica: the current model (size d) at the end
};

/// Runs stochastic gradient descent as `trace` orders it on the objective `spec.objective` describes, from x = 0.
///
/// Block s of the model is the coordinates BlockSplit(d, trace.stages) gives stage s. Each replica keeps, per
/// block, the versions a later Backward may still read (the last reader of each version is known from the trace
/// up front, so the store never holds a version no future event needs):
/// - Backward (stage s, replica r, micro-batch i): the gradient of block s of micro-batch (r, i)'s sample at the
///   mixed model whose block t is version versions_read[t] of replica r, added to r's accumulator of block s;
/// - Apply (s, r): block s of r becomes its newest version minus step_size times the MEAN of the gradients
///   accumulated since its previous Apply (the sum divided by their count, the division done last, as mini-batch
///   SGD averages over its micro-batches: the step size does not grow with the number of micro-batches);
/// - Average (s): block s of every replica becomes the replicas' mean, summed in replica order. Versions count
///   Apply events only, so the newest version of each replica is overwritten in place: a Backward that reads it
///   later sees the averaged weights. (A micro-batch in flight across an Average cannot be represented.)
///
/// Throws InputError when the trace is inconsistent (each message names trace.events[k] and the field) or when
/// the objective has fewer coordinates than the trace has stages.
ConvergenceResult run_convergence(const UpdateLog& trace, const ConvergenceSpec& spec);

/// The same with an objective built beforehand (make_objective(spec.objective), or any Objective): a sweep over
/// step sizes or schedules builds it once. spec.objective is then ignored; step_size and sample_every are used.
ConvergenceResult run_convergence(const UpdateLog& trace, const ConvergenceSpec& spec, const Objective& objective);

}  // namespace placesim
