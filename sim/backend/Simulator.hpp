#pragma once
#include <cstdint>
#include <vector>

#include "strategies/graph/SimResult.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// Runs one training step's TaskGraph on the cluster with SimGrid (CM02, TCP-gamma 0, no cross-traffic). Activities
/// are created just in time, when a task's last predecessor completes. One call per process (SimGrid's limit).
SimResult simulate(const TaskGraph& graph, const ClusterSpec& cluster, const SimOptions& options);

}  // namespace placesim
