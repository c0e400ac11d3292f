#pragma once
#include <string>
#include <vector>

#include "sim/converge/ConvergeSweep.hpp"

namespace placesim {

/// One row per cell with its best run (figures are means over the seeds): objective, stages, schedule,
/// microbatches, replicas, local_steps, budget_s, seeds, step_size, log2_step, at_grid_edge, final_gap
/// (final loss - f*), final_loss, min_loss, initial_loss, updates, final_time_s, max_delay, mean_delay,
/// idle_fraction, diverged_steps, reference_minimum (f*), minimum_gradient_norm (the largest over seeds). When
/// every step size diverged the cells from step_size to final_time_s are empty.
std::string sweep_csv(const std::vector<ConvergeSweepCell>& cells);

/// One JSON object per line and run (every step size of every cell): the cell's labels, the run's means and
/// per-seed losses, and "chosen": true on the cell's best run. A non-finite loss becomes null.
std::string sweep_jsonl(const std::vector<ConvergeSweepCell>& cells);

/// Per objective: one row per S, one column per schedule, each "final loss - f* (log2 of the tuned step)"; '*'
/// marks a step at the edge of the grid, "diverged" a cell where every step size diverged.
std::string sweep_table(const std::vector<ConvergeSweepCell>& cells);

/// Final loss - f* against S (both axes logarithmic), one line per schedule, one panel per objective side by side.
std::string sweep_svg(const std::vector<ConvergeSweepCell>& cells);

}  // namespace placesim
