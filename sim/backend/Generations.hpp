#pragma once
// Mixed hardware (cluster.accelerators): what a job on nodes of different accelerators runs at.
#include <vector>

#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// The accelerator of pipeline stage `stage`'s GPUs with the least memory (the first of them on a tie).
const AcceleratorSpec& smallest_accelerator(const Experiment& e, const ClusterSpec& c, int stage);

/// Seconds of one layer's forward and backward (and recompute) on pipeline stage `stage` if it ran on accelerator
/// `acc`: the stage's layers averaged (an MoE layer's dense part and its mean ep rank's experts).
double layer_seconds_on(const Experiment& e, const ClusterSpec& c, int stage, const AcceleratorSpec& acc);

/// The layers of each of `per_layer_s.size()` pipeline stages that minimise the slowest stage's time, stage s taking
/// n_s x per_layer_s[s] + ends_s[s] (its embedding or output layer): every stage at least one layer, at most
/// most[s] when `most` is given (what its memory holds) unless no split fits, `layers` in all. Layers go one at a time
/// to the stage whose time grows least (optimal for this min-max, each stage's time being linear in its layers).
std::vector<std::int64_t> balanced_split(std::int64_t layers, const std::vector<double>& per_layer_s,
                                         const std::vector<double>& ends_s, const std::vector<std::int64_t>& most = {});

/// Mixed hardware: each pipeline stage is costed on the accelerator of its first GPU (stage_costs); a GPU of another
/// accelerator in a stage runs at the ratio of a layer's time on the two (ClusterSpec::generation_speed, so a
/// data-parallel group across generations waits for the slower). A pipeline of one chunk per stage whose stages run
/// different accelerators, without strategy.layers_per_stage, gets balanced_split. Describes what it did in
/// c.mixed_note. Does nothing on a cluster of one accelerator.
void apply_generations(Experiment& e, ClusterSpec& c);

}  // namespace placesim
