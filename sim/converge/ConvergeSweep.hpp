#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/placement/Strategy.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/objective/ConvergenceSpec.hpp"

namespace placesim {

/// What `placesim converge-sweep` compares: every schedule at every stage count S on every objective, each run for
/// the same simulated time at a given S, each with its step size tuned over powers of two for the lowest mean final
/// suboptimality f - f* over a few seeded instances of the objective.
///
/// Defaults (the seed paper's setting as far as it is stated, Ilin & Richtarik, arXiv 2606.03498): uniform stages
/// with forward = backward = 1 time unit and free transfers and updates; M = 4 S micro-batches per step (GPipe's
/// rule of thumb M >= 4 S, which keeps the 1F1B bubble under 20 %); LocalSGD with R = S replicas (one micro-batch
/// of each in the pipeline at once, so no staleness) and H = 5 local steps; a budget of 2000 time units; step sizes
/// 2^-12 .. 2^4 (logistic regression, whose smoothness is at most 1/4, is stable up to 2^3); objectives: the default
/// quadratic of ConvergenceSpec (d = 512, kappa = 10, noise 0.1) and a logistic regression with 64 samples per
/// coordinate (d = 128, 8192 samples, kappa = 10, 10 % flipped labels) so that the data are not linearly separable;
/// 10 seeds (with 3, seed-to-seed spread decided some rankings).
struct ConvergeSweepSpec {
  std::vector<int> stages = {2, 4, 8, 16, 32};
  std::vector<Schedule> schedules = {Schedule::PipeDream, Schedule::PipeDream2BW, Schedule::OneFOneB, Schedule::GPipe,
                                     Schedule::LocalSGD};
  std::vector<ConvergenceSpec> objectives;  ///< step_size unused: the sweep tunes it
  int microbatches_per_stage = 4;           ///< M = this x S
  int local_steps = 5;                      ///< LocalSGD H
  int replicas = 0;                         ///< LocalSGD R; 0 = S
  double forward_s = 1, backward_s = 1, p2p_s = 0;
  double budget_s = 2000;                      ///< simulated time every run gets, whatever the schedule or S
  int min_log2_step = -12, max_log2_step = 4;  ///< step sizes 2^min .. 2^max
  int threads = 0;                             ///< worker threads; 0 = the hardware's
  /// Instances of each objective: its seed, seed + 1, ... (data, noise and batches all change); every figure of a
  /// cell is the mean over them, so that a ranking is not an accident of one draw.
  int seeds = 10;
};

/// The defaults above, with the quadratic and logistic objectives.
ConvergeSweepSpec default_converge_sweep();
/// A small sweep for tests: S = 2, 4; budget 200; d = 32 (logistic: 512 samples); step sizes 2^-6 .. 2^3; 2 seeds.
ConvergeSweepSpec quick_converge_sweep();

/// Reads a sweep file over `base` (default_converge_sweep() or quick_converge_sweep()): {"stages": [..], "schedules":
/// [..], "objectives": [<convergence section without step_size>, ..], "microbatches_per_stage", "local_steps",
/// "replicas", "forward_s", "backward_s", "p2p_s", "budget_s", "min_log2_step", "max_log2_step", "threads",
/// "seeds"}.
/// Keys left out keep the base's value. Throws InputError naming "sweep.<field>" and the value.
ConvergeSweepSpec parse_converge_sweep(const Json& value, ConvergeSweepSpec base);

/// One step size of one (objective, S, schedule): its runs on every instance (seed) of the objective.
struct ConvergeSweepRun {
  int log2_step = 0;
  std::vector<double> final_loss, min_loss, initial_loss;  ///< per seed; min_loss over the ~6 sampled points
  double final_time_s = 0;                                 ///< of the last update within the budget
  std::int64_t updates = 0, backwards = 0;                 ///< the same for every seed: one trace
  bool diverged = false;                                   ///< on at least one seed
  double mean_final_loss = 0;                              ///< mean over seeds (not finite when diverged)
  double mean_gap = 0;  ///< mean over seeds of final_loss - f* of that seed (not finite when diverged)
};

/// One (objective, S, schedule) cell: every step size tried and the one kept.
struct ConvergeSweepCell {
  std::string objective;
  int stages = 0;
  Schedule schedule = Schedule::PipeDream;
  int microbatches = 0, replicas = 1, local_steps = 1;
  double budget_s = 0;
  std::int64_t max_delay = 0;
  double mean_delay = 0, idle_fraction = 0;
  std::vector<double> minimum;                ///< f* per seed: see estimate_minimum (exactly 0 for a quadratic
                                              ///< without l2)
  std::vector<double> minimum_gradient_norm;  ///< per seed, ||grad f|| where f* was found: near 0 unless f has no
                                              ///< minimizer
  std::vector<ConvergeSweepRun> runs;         ///< by increasing step size
  int best = -1;  ///< index into runs of the lowest mean_gap; -1 when every step size diverged

  /// The best step size is the smallest or the largest of the grid: the grid may not hold the true optimum.
  bool best_at_grid_edge() const { return best == 0 || best + 1 == static_cast<int>(runs.size()); }
};

/// Runs the sweep: each (S, schedule) pipeline is evaluated once, each objective built and minimized once, and the
/// executions (objectives x pipelines x step sizes) are spread over spec.threads threads. The cells come in the order
/// objective, S, schedule; the result does not depend on the thread count.
std::vector<ConvergeSweepCell> run_converge_sweep(const ConvergeSweepSpec& spec);

}  // namespace placesim
