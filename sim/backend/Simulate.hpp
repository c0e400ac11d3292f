#pragma once
#include <string>
#include <vector>

#include "sim/backend/Simulator.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/report/SimReport.hpp"

namespace placesim {

/// An experiment ready to simulate: its cluster parsed once and checked against the mesh (device count), and the
/// device memory of the memory check defaulted to the accelerator's HBM unless one was given.
struct SimulationInput {
  Experiment experiment;
  ClusterSpec cluster;
};

/// Resolves the experiment's cluster. Throws InputError naming the fields (no cluster, a mesh that does not fit).
SimulationInput resolve_simulation(Experiment e);

struct SimulateSettings {
  ExpandOptions expand;
  SimOptions sim;                   ///< `record` is ignored: simulate_experiment() decides it from `traced_devices`
  std::vector<int> traced_devices;  ///< devices whose every task is recorded for a trace; ascending
  bool reproducible = false;        ///< zero the host-measured fields (wall time) so reports are byte-identical
  bool force = false;               ///< expand even when the estimated compute tasks exceed kMaxComputeTasks
};

/// The most compute tasks (estimated_compute_tasks) simulate_experiment() expands without `force`: 20 million tasks
/// take minutes and gigabytes to expand and simulate.
constexpr double kMaxComputeTasks = 20e6;

/// Devices whose tasks the simulation records: the traced ones and the pipeline at dp 0, tp 0, which the
/// pipeline metrics, the layer times and derived pipelines read.
std::vector<char> recorded_devices(const Experiment& e, const std::vector<int>& traced);

/// Validates, analyses (once), expands and simulates one resolved experiment.
SimulatedStep simulate_experiment(const SimulationInput& in, const SimulateSettings& settings);

/// The records of the pipeline at dp 0, tp 0: what the pipeline metrics, the layer times and derived pipelines read.
SimulationRecord pipeline_records(const Experiment& e, const SimulationRecord& all);

/// Names and mesh coordinates of the experiment's devices on the cluster.
std::vector<DeviceInfo> device_infos(const Experiment& e, const ClusterSpec& c);

}  // namespace placesim
