#pragma once
#include "strategies/graph/Folding.hpp"
#include "strategies/graph/SimResult.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

struct ExpandOptions {
  /// Layers per compute task; 0 picks the smallest divisor of the layers per chunk that keeps the graph under
  /// `task_budget` compute tasks.
  int layer_group = 0;
  double task_budget = 4e5;
  /// Symmetry folding (Folding::folded_lanes): expand the tasks of the first `folded_lanes` data lanes only; the
  /// collectives keep every member of their groups. 0: every lane.
  int folded_lanes = 0;
};

/// How the step of `e` on `c` folds: its data lanes in congruent blocks of whole nodes and whole leaf switches (see
/// Folding). Not folded (folded_lanes = lanes) when there is a single block, or, with the reason, when the blocks
/// are not congruent (the data lanes of a stage do not divide into blocks of whole nodes and leaves; mixed
/// accelerators; a degraded leaf switch). Blocks a straggler or a degraded NIC or NVLink touches are simulated apart
/// (Folding::window, rotation), unless that would simulate half the blocks or more. Overlap interference folds at
/// every fidelity: it depends on when compute runs, not on the order of simultaneous events.
Folding plan_folding(const Experiment& e, const ClusterSpec& c);

/// The layers per compute task expand() uses for `e` under `o`.
int layer_group_size(const Experiment& e, const ExpandOptions& o);

/// The compute tasks expand() makes for `e` under `o`, without expanding: devices x micro-batches x chunks x passes
/// (forward, backward and, with recompute, recompute) x layer groups per chunk. A lower bound on the graph's tasks
/// (collectives, sends, optimizer steps and transfers come on top), cheap enough to check before expanding.
double estimated_compute_tasks(const Experiment& e, const ExpandOptions& o);

/// One training step of `e` on cluster `c` as a TaskGraph: per device, micro-batch and layer group the forward,
/// recompute and backward tasks in the pipeline schedule's order; TP collectives; PP sends; ZeRO/FSDP gathers with
/// prefetch of the next unit; bucketed DP gradient synchronisation overlapping the backward; the optimizer step;
/// offload transfers; memory deltas. Pure: no I/O, no globals; equal inputs give identical graphs (stable ids).
TaskGraph expand(const Experiment& e, const ClusterSpec& c, const ExpandOptions& o = {});

}  // namespace placesim
