#include "strategies/ClusterFit.hpp"

#include <map>

#include "strategies/Validity.hpp"
#include "topology/Accelerator.hpp"

namespace placesim {

namespace {

// Interim reader of the cluster section, used until topology/Cluster.cpp (parse_cluster) is merged; then
// cluster_fit() becomes parse_cluster(cluster) -> {devices(), accelerator.hbm_bytes}. It reads only the fields a
// GPU count and a memory capacity need and leaves the others (links, fabric) to that parser.
struct PresetNode {
  const char* accelerator;
  std::int64_t gpus_per_node;
};

const std::map<std::string, PresetNode>& cluster_presets() {
  static const std::map<std::string, PresetNode> table = {
      {"dgx-a100", {"a100-80gb", 8}}, {"dgx-h100", {"h100-sxm", 8}}, {"selene", {"a100-80gb", 8}}};
  return table;
}

ClusterFit interim_cluster_fit(const Json& cluster) {
  Json object = cluster.is_string() ? Json{{"preset", cluster}} : cluster;
  ObjectReader r(object, "cluster");
  AcceleratorSpec accelerator;
  std::int64_t gpus_per_node = 8;
  if (r.has("preset")) {
    std::string name = r.get_string("preset", "");
    auto it = cluster_presets().find(name);
    if (it == cluster_presets().end())
      throw InputError(r.field("preset") + "=" + name + " is not a cluster preset (dgx-a100, dgx-h100, selene)");
    accelerator = accelerator_preset(it->second.accelerator, r.field("preset"));
    gpus_per_node = it->second.gpus_per_node;
  }
  if (const Json* a = r.child("accelerator")) accelerator = parse_accelerator(*a, r.field("accelerator"));
  gpus_per_node = r.get_positive_int("gpus_per_node", gpus_per_node);
  std::int64_t nodes = r.get_positive_int("nodes", 1);
  ClusterFit fit;
  fit.devices = nodes * gpus_per_node;
  fit.gpus_per_node = gpus_per_node;
  fit.device_memory_bytes = accelerator.hbm_bytes;
  fit.summary = "cluster.nodes=" + std::to_string(nodes) + " x " + std::to_string(gpus_per_node) + " GPUs per node";
  return fit;
}

}  // namespace

ClusterFit cluster_fit(const Json& cluster) {
  return interim_cluster_fit(cluster);
}

std::string cluster_mesh_mismatch(const Experiment& e, const ClusterFit& cluster) {
  const StrategySpec& s = e.strategy;
  if (s.devices() == cluster.devices) return "";
  return "cluster: the mesh strategy.dp x tp x pp = " + std::to_string(s.dp) + " x " + std::to_string(s.tp) + " x " +
         std::to_string(s.pp) + " = " + std::to_string(s.devices()) + " devices does not match the cluster's " +
         std::to_string(cluster.devices) + " GPUs (" + cluster.summary + ")";
}

void check_cluster_mesh(const Experiment& e, const ClusterFit& cluster) {
  std::string mismatch = cluster_mesh_mismatch(e, cluster);
  if (!mismatch.empty()) throw InvalidStrategy(mismatch);
}

}  // namespace placesim
