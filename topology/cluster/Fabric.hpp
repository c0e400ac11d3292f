#pragma once
#include <string>
#include <utility>
#include <vector>

#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// The physical links of a cluster, each full duplex (one independent channel per direction).
enum class LinkKind {
  NvLink,      ///< one per GPU: GPU <-> NVSwitch
  Pcie,        ///< one per GPU: GPU <-> host CPU
  Nic,         ///< one per NIC (node x rail): NIC + cable <-> its leaf switch
  LeafUplink,  ///< one per leaf when oversubscription > 1: leaf <-> spine, shared by the leaf's NICs
  SpinePort,   ///< one per NIC when oversubscription = 1: the NIC's own share of a non-blocking leaf's uplinks
  MeshLink,    ///< mesh nodes: one per linked GPU pair (its links together); up = from the lower GPU to the higher
  PcieSwitch,  ///< PCIe nodes: one per PCIe switch, its uplink to the CPU
  NumaLink,    ///< PCIe nodes with two NUMA domains: one per node, CPU 0 <-> CPU 1 (up = from domain 0)
};

/// One link: its kind and index within the kind (GPU, NIC or leaf number).
struct LinkId {
  LinkKind kind;
  int index;
  bool operator==(const LinkId&) const = default;
};

/// One link crossed by a route, and the direction: `up` goes from the GPU side towards the switches.
struct Hop {
  LinkId link;
  bool up;
  bool operator==(const Hop&) const = default;
};

/// What SimGrid needs to create a link.
struct LinkParams {
  std::string name;
  double bw_Bps;     ///< per direction
  double latency_s;  ///< paid once per direction crossed
};

/// Routes through a cluster, computed from indices alone (no SimGrid). Devices are numbered
/// node * gpus_per_node + local; GPUs on node n use NIC rail local * nics_per_node / gpus_per_node.
///
/// Leaves have switch_radix / 2 ports facing NICs. fat-tree: NICs fill leaves in order (node-major), so a node's
/// NICs usually share a leaf. rail-optimized: a scalable unit is switch_radix / 2 nodes; rail r of every node in
/// unit u goes to leaf u * nics_per_node + r, so same-rail traffic inside a unit crosses a single switch.
/// Switch latency is split over the links next to it: a Nic link carries half a leaf's switch_latency_s, an uplink
/// (or spine port) half a leaf's and half the spine's.
class Fabric {
 public:
  /// Validates `cluster` (see validate_cluster).
  explicit Fabric(const ClusterSpec& cluster);

  const ClusterSpec& cluster() const { return cluster_; }
  int rail(int local_gpu) const;
  /// The NIC (node x nics_per_node + rail) GPU `gpu`'s traffic across nodes leaves through: its rail's, or when that
  /// NIC is down the one ClusterSpec::nic_rail picks.
  int nic_of(int gpu) const;
  int leaf(int node, int rail) const;
  int leaves() const;
  /// Number of links of a kind (0 for the uplink kind the oversubscription does not use).
  int link_count(LinkKind kind) const;
  LinkParams link(LinkId id) const;

  /// GPU -> GPU route. Throws InputError naming both devices when one is out of range, when they are the same
  /// device, or when the cluster has no NIC to join their nodes.
  std::vector<Hop> route(int src_gpu, int dst_gpu) const;
  /// GPU -> its own node's CPU: the GPU's PCIe link, up.
  std::vector<Hop> host_route(int gpu) const;
  /// Sum of the latencies of the hops, seconds.
  double latency_s(const std::vector<Hop>& hops) const;

  /// The transfers each hop of a ring collective over `members` (devices in ring order) makes, as NCCL's channels
  /// make them. NCCL builds one ring per NIC and visits a node's GPUs in a different order in each, so the bytes a
  /// ring moves from one node to the next leave on every rail the group holds there:
  ///   hop inside a node:  one transfer, members[r] -> members[r + 1]
  ///   hop across nodes:   j = min(rails of the group on the sending node, on the receiving node) transfers of
  ///                       1/j of the hop's bytes each, from the sender's i-th rail (its lowest GPU on that rail) to
  ///                       the receiver's i-th, rails in order (same rail to same rail where both hold it)
  /// Inside a mesh node a group's ring runs as NCCL's (RCCL's) several rings at once: hop r sends to every member
  /// s places on (members[r + s]) for each shift s whose pairs all have direct links, 1/shifts of the bytes each;
  /// with no such shift, to members[r + 1] (over PCIe where the pair has no link).
  /// Result[r] lists the (source, destination) devices of hop r -> r + 1 (the last hop closes the ring).
  /// Precondition: members are distinct devices of this cluster.
  std::vector<std::vector<std::pair<int, int>>> ring_channels(const std::vector<int>& members) const;

 private:
  int nics_on_leaf(int leaf) const;
  /// GPU -> GPU inside one node, by the node's links.
  std::vector<Hop> node_route(int src_gpu, int dst_gpu) const;
  int pair_index(int a, int b) const;
  /// The lowest GPU of node `node` on rail `rail` (the one whose NIC a PXN detour leaves through).
  int rail_gpu(int node, int rail) const;
  void check_device(int gpu, const std::string& what) const;

  ClusterSpec cluster_;
  int down_ports_;
};

}  // namespace placesim
