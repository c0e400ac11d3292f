#pragma once
#include <cstddef>

#include "strategies/graph/TaskGraph.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim::test {

/// One node of `gpus` A100s on an NVSwitch of raw links (comm_model "links"): `nvlink_bw_Bps` and 1 us per NVLink
/// direction, so a route GPU -> GPU crosses two links, 2 us. Overlap interference inside the node
/// (tests/test_interference.cpp) is off: the schedule's own timing.
inline ClusterSpec links_node(int gpus, double nvlink_bw_Bps = 100e9) {
  ClusterSpec c;
  c.accelerator = accelerator_preset("a100-80gb", "cluster.accelerator");
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.nvlink_bw_Bps = nvlink_bw_Bps;
  c.nvlink_latency_s = 1e-6;
  c.comm_model = CommModel::Links;
  c.accelerator.profile.intra_node_interference = {};
  return c;
}

/// A task graph over `devices` devices with no tasks and nothing resident.
inline TaskGraph empty_graph(int devices) {
  TaskGraph g;
  g.devices = devices;
  g.resident.assign(static_cast<std::size_t>(devices), {0, 0, 0, 0});
  return g;
}

}  // namespace placesim::test
