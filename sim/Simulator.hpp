#pragma once
#include <cstdint>
#include <vector>

#include "sim/DeviceStats.hpp"
#include "sim/Record.hpp"
#include "strategies/TaskGraph.hpp"
#include "topology/Cluster.hpp"

namespace placesim {

struct SimOptions {
  /// Every collective step as a flow through the platform (full contention). Otherwise a collective whose members
  /// share one node runs as one activity with the exact α–β cost of its ring (the NVSwitch cannot be contended by
  /// it), and only collectives that cross nodes are decomposed into flows.
  bool flow = false;
  std::vector<char> record;  ///< per device: keep its task records and memory events (empty: all devices)
  bool fine = false;         ///< one record per collective step instead of one per collective and device
};

struct SimResult {
  SimulationRecord record;
  std::vector<DeviceStats> devices;
  double step_time_s = 0;
  std::uint64_t activities = 0;  ///< SimGrid activities run (network and PCIe transfers)
  std::uint64_t timers = 0;      ///< fixed-length tasks run as SimGrid kernel timers (compute, exact collectives)
  double wall_time_s = 0;        ///< host time the simulation took
};

/// Runs one training step's TaskGraph on the cluster with SimGrid (CM02, TCP-gamma 0, no cross-traffic). Activities
/// are created just in time, when a task's last predecessor completes. One call per process (SimGrid's limit).
SimResult simulate(const TaskGraph& graph, const ClusterSpec& cluster, const SimOptions& options);

}  // namespace placesim
