#pragma once
#include <string>
#include <vector>

#include "strategies/sweep/Sweep.hpp"

namespace placesim {

/// Small experiments whose reports together hold every section a sweep point's report can have: a dense model
/// on a pipeline with context parallelism and a named stack (its prediction interval), and a mixture of experts
/// with expert parallelism. Each has a cluster, so each also simulates (in well under a second).
std::vector<Json> figure_reference_experiments();

/// True when `figure` names a node of `report`. A number selects a list element; an index beyond the reference's
/// list selects its last element, as a point's report may have more stages or devices than the reference.
bool report_has(const Json& report, const std::string& figure);

/// Throws InputError listing every figure of `spec` that none of `reports` has, each with the nearest path one of
/// them has. `reports` are what the sweep's rows read figures from: the analyze reports of the reference
/// experiments, and in simulate mode their simulate reports too. An analyze-mode `simulation.*` figure is refused as
/// needing "mode": "simulate".
void check_figures_in_reports(const SweepSpec& spec, const std::vector<Json>& reports);

}  // namespace placesim
