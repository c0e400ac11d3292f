#pragma once
#include <string>
#include <vector>

#include "sim/ConvergeSweep.hpp"

namespace placesim {

/// One row per cell with its best run: objective, stages, schedule, microbatches, replicas, local_steps, budget_s,
/// step_size, log2_step, at_grid_edge, final_loss, min_loss, initial_loss, updates, final_time_s, max_delay,
/// mean_delay, bubble_fraction, diverged_steps. When every step size diverged the step and loss cells are empty.
std::string sweep_csv(const std::vector<SweepCell>& cells);

/// One JSON object per line and run (every step size of every cell): the cell's labels, the run's figures and
/// "chosen": true on the cell's best run. A non-finite loss becomes null.
std::string sweep_jsonl(const std::vector<SweepCell>& cells);

/// Per objective: one row per S, one column per schedule, each "final loss (log2 of the tuned step)"; '*' marks a
/// step at the edge of the grid, "diverged" a cell where every step size diverged.
std::string sweep_table(const std::vector<SweepCell>& cells);

/// Final loss against S (both axes logarithmic), one line per schedule, one panel per objective side by side.
std::string sweep_svg(const std::vector<SweepCell>& cells);

}  // namespace placesim
