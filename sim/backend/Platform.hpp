#pragma once
// The cluster as a SimGrid platform. Every arrow is a full-duplex link (an independent SimGrid link per direction);
// a route pays the latency of every link it crosses and the bandwidth of the most contended one (CM02 max-min).
//
//        node n                                                  leaf switches          spine (non-blocking)
//   +---------------------------------------------+
//   | gpu0 --nvlink-0--+                          |  oversubscription = 1:
//   | gpu1 --nvlink-1--+-- NVSwitch (no link:     |    nic-n.r --[leaf]-- spine-n.r --[spine]
//   |  ...             |   non-blocking)          |    (per-NIC share of a non-blocking leaf's uplinks)
//   | gpuK --nvlink-K--+                          |  oversubscription > 1:
//   |                                             |    nic-n.r --[leaf l]-- uplink-l --[spine]
//   | gpu_i --pcie-i-- cpu-n (host_flops x K)     |    uplink-l: NICs of leaf l x nic_bw / oversubscription,
//   |                    +-- nvme-n (disk)        |              shared by all of them
//   | gpu_i ---------------- nic-n.r (rail r) ----+--> leaf (see topology/cluster/Fabric.hpp for leaf numbering)
//   +---------------------------------------------+
//
// GPU -> GPU, same node:   nvlink-i up, nvlink-j down
//                          = 2 x nvlink_latency + bytes / nvlink_bw (contention: the two GPUs' own links only)
// GPU -> GPU, other node:  nic(src) up, [uplink/spine port of src leaf up, of dst leaf down], nic(dst) down
//                          same leaf:    2 x nic_latency + 1 x switch_latency + bytes / nic_bw
//                          across leaves: 2 x nic_latency + 3 x switch_latency + bytes / min(nic_bw, uplink share)
// GPU <-> its own CPU:     pcie-i (up towards the CPU) = pcie_latency + bytes / pcie_bw
// NVMe:                    a SimGrid disk on cpu-n, nvme_read_bw / nvme_write_bw, no latency.
// The GPU's PCIe path to its NIC (GPUDirect RDMA through a PCIe switch) is not modelled: it is assumed never to be
// the bottleneck and does not contend with host <-> device copies.
//
// Routes are declared only for the GPU pairs a run uses (plus every GPU <-> own CPU) and stored sparsely as
// SimGrid bypass routes of an otherwise route-less zone: SimGrid's full zone keeps a P x P table of route pointers
// whatever is declared (2.7 GB at 16,384 GPUs), while bypass routes cost memory per declared route only.
#include <simgrid/forward.h>

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strategies/graph/Folding.hpp"
#include "topology/cluster/Cluster.hpp"
#include "topology/cluster/Fabric.hpp"

namespace placesim {

/// A folded step's transfer from simulated `src` to `dst`, routed as the congruent transfer `route_src` ->
/// `route_dst` moved onto the simulated devices: a ring hop to a device outside the simulated blocks, or a transfer
/// one of whose congruent transfers (the same moved by a block) crosses more switches. Of the congruent transfers, one
/// per block, it takes the slowest's route: an unfolded ring or pipeline runs at its slowest hop's pace.
struct MirroredHop {
  int src = 0, dst = 0, route_src = 0, route_dst = 0;
  bool operator==(const MirroredHop&) const = default;
};

/// The SimGrid resources of one cluster.
struct Platform {
  std::vector<simgrid::s4u::Host*> gpus;  ///< index = global device = node * gpus_per_node + local; speed = peak bf16
  std::vector<simgrid::s4u::Host*> cpus;  ///< one per node; gpus_per_node cores of host_flops FLOP/s each
  simgrid::s4u::Host* timer = nullptr;    ///< runs fixed delays: speed 1e9 FLOP/s, a core per concurrent delay
  std::vector<simgrid::s4u::Disk*> nvme;  ///< one per node, attached to that node's cpu host
  /// GPU pairs with a route (both directions), as min(a,b) * devices + max(a,b), sorted; see has_route().
  std::vector<std::uint64_t> routed_pairs;
  int devices = 0;
  /// Folded steps: per receiving device of a MirroredHop, a host standing for it. The route from the hop's sender to
  /// the mirror crosses the congruent hop's links moved to the sender's and to the receiver's representative's: by
  /// symmetry the representative's NIC receives what the receiver's does, so the simulated blocks' links carry the
  /// load of every block.
  std::unordered_map<int, simgrid::s4u::Host*> mirrors;
  std::vector<std::uint64_t> mirrored_pairs;  ///< (src, dst) of the MirroredHops as src * devices + dst, sorted
  /// Does a transfer from a to b go to b's mirror?
  bool mirrored(int a, int b) const;

  /// True if a transfer between GPUs a and b (either direction) was routed. SimGrid aborts the process on a
  /// transfer without a route, so check before creating one whose pair may not have been declared.
  bool has_route(int a, int b) const;
};

/// The route a MirroredHop's flow takes to its mirror: the congruent hop's route with the sender's side's links moved
/// to the sender's (`src`) and the receiver's side's to the receiver's representative (`dst` when simulated).
std::vector<Hop> mirrored_route(const Fabric& fabric, const Folding& folding, const MirroredHop& mirrored);

/// Silences SimGrid's logging and sets the network model configuration: network/model:CM02, network/TCP-gamma:0,
/// network/crosstraffic:0, then cluster.simgrid_config in key order. Must be called before the first zone exists.
/// A key or value SimGrid refuses is an InputError naming cluster.simgrid_config.<key>.
void configure_engine(simgrid::s4u::Engine& engine, const ClusterSpec& cluster);

/// Calls configure_engine, then builds one flat zone with a host per GPU (speed = accelerator.peak_bf16_flops), a
/// host per node CPU with its NVMe disk, the links of the diagram above, and routes only for `pairs` (GPU <-> GPU
/// device pairs the DAG uses, either order, duplicates allowed) plus GPU <-> own CPU over PCIe. Throws InputError for
/// an invalid cluster, and naming the devices for a pair that is out of range or a device paired with itself;
/// std::logic_error when the process already has a platform (SimGrid allows one per process).
/// `mirrored` (folded steps): ring hops from a simulated device to a folded receiver, each given a mirror host of the
/// receiver (Platform::mirrors) routed as described there.
/// Cost: O(devices + pairs) time and memory.
Platform build_platform(simgrid::s4u::Engine& engine, const ClusterSpec& cluster,
                        const std::vector<std::pair<int, int>>& pairs, const std::vector<MirroredHop>& mirrored = {},
                        const Folding& folding = {});

}  // namespace placesim
