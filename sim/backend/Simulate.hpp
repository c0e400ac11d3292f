#pragma once
#include <string>

#include "sim/backend/Simulator.hpp"
#include "strategies/analytic/Analytic.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// The experiment's cluster, checked against the mesh (device count) and used for the memory check (its
/// accelerator's HBM, unless a device memory was already given). Throws InputError naming the fields.
ClusterSpec resolve_cluster(Experiment& e);

struct SimulateSettings {
  ExpandOptions expand;
  SimOptions sim;
  bool reproducible = false;  ///< zero the host-measured fields (wall time) so reports are byte-identical
};

struct SimulateOutcome {
  Json report;      ///< analyze report + cluster + simulation + validation
  SimResult result;
};

/// Validates, analyses, expands and simulates one experiment with a cluster.
SimulateOutcome simulate_experiment(Experiment& e, const SimulateSettings& settings);

/// The records of the pipeline at dp 0, tp 0: what the pipeline metrics, the layer times and derived pipelines read.
SimulationRecord pipeline_records(const Experiment& e, const SimulationRecord& all);

/// Names and mesh coordinates of the experiment's devices on the cluster.
std::vector<DeviceInfo> device_infos(const Experiment& e, const ClusterSpec& c);

/// A short human-readable summary of a simulate report.
std::string simulation_table(const Json& report);

}  // namespace placesim
