#pragma once
#include <cstdint>
#include <string>

#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// What checking a strategy against its cluster needs: the GPU count and the memory of one GPU.
struct ClusterFit {
  std::int64_t devices = 0;
  std::int64_t gpus_per_node = 0;
  double device_memory_bytes = 0;  ///< 0 when the cluster names no accelerator
  std::string summary;             ///< "cluster.nodes=64 x 8 GPUs per node", for messages
};

/// Reads an experiment's "cluster" section (a preset name or an object). Throws InputError naming the field.
ClusterFit cluster_fit(const Json& cluster);
/// The same figures of a parsed cluster.
ClusterFit cluster_fit(const ClusterSpec& cluster);

/// Why the mesh dp x tp x pp does not use exactly the cluster's GPUs, or "" when it does.
std::string cluster_mesh_mismatch(const Experiment& e, const ClusterFit& cluster);
/// Throws InvalidStrategy with cluster_mesh_mismatch() when it is not "".
void check_cluster_mesh(const Experiment& e, const ClusterFit& cluster);

}  // namespace placesim
