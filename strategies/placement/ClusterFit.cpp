#include "strategies/placement/ClusterFit.hpp"

#include "topology/cluster/Cluster.hpp"

namespace placesim {

ClusterFit cluster_fit(const Json& cluster) {
  return cluster_fit(parse_cluster(cluster));
}

ClusterFit cluster_fit(const ClusterSpec& c) {
  ClusterFit fit;
  fit.devices = c.devices();
  fit.gpus_per_node = c.gpus_per_node;
  fit.device_memory_bytes = c.accelerator.hbm_bytes;
  fit.summary = "cluster.nodes=" + std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node) + " GPUs per node";
  return fit;
}

std::string cluster_mesh_mismatch(const Experiment& e, const ClusterFit& cluster) {
  const StrategySpec& s = e.strategy;
  if (s.devices() == cluster.devices) return "";
  const std::string mesh =
      s.cp > 1 ? "strategy.dp x cp x tp x pp = " + std::to_string(s.dp) + " x " + std::to_string(s.cp) + " x "
               : "strategy.dp x tp x pp = " + std::to_string(s.dp) + " x ";
  return "cluster: the mesh " + mesh + std::to_string(s.tp) + " x " + std::to_string(s.pp) + " = " +
         std::to_string(s.devices()) + " devices does not match the cluster's " + std::to_string(cluster.devices) +
         " GPUs (" + cluster.summary + ")";
}

void check_cluster_mesh(const Experiment& e, const ClusterFit& cluster) {
  std::string mismatch = cluster_mesh_mismatch(e, cluster);
  if (!mismatch.empty()) throw InvalidStrategy(mismatch);
}

}  // namespace placesim
