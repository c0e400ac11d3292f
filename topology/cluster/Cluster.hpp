#pragma once
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "topology/hardware/Accelerator.hpp"
#include "topology/hardware/CommProfile.hpp"

namespace placesim {

/// How the NICs reach the switches: a fat-tree puts a node's NICs under one leaf; rail-optimized puts NIC i of
/// every node under leaf i (rail i), so same-rail traffic between nodes crosses a single switch.
enum class FabricTopology { FatTree, RailOptimized };
/// How transfers are costed: Nccl at the bus bandwidth and per-step latency NCCL achieves on the fabric (`comm`),
/// Links at the raw link figures.
enum class CommModel { Nccl, Links };

/// A cluster of identical nodes. SI units inside (bytes, seconds, bytes per second, FLOP/s); strings such as
/// "400Gbps" or "2us" are parsed at the JSON edge only.
///
///   node: gpu0..gpuN-1 --NVLink--> NVSwitch      gpu_i --PCIe--> host CPU / host memory / NVMe
///         gpu_i --> NIC (rail i, or a shared NIC) --> leaf switch --> spine (oversubscribed fat-tree)
/// How a node's GPUs reach each other: through NVSwitch (every pair at each GPU's nvlink_bw), over direct links
/// between some pairs (an NVLink or Infinity Fabric mesh, NVLink bridges), or over PCIe alone.
enum class NodeLinks { NvSwitch, Mesh, Pcie };

/// The node's GPU-to-GPU links when they are not an NVSwitch ("node_links").
struct NodeShape {
  NodeLinks kind = NodeLinks::NvSwitch;
  /// mesh: {a, b, links} for local GPUs a < b joined by `links` links of link_bw_Bps each (per direction); a pair
  /// without links talks over the two GPUs' PCIe links through the host.
  std::vector<std::array<int, 3>> pairs;
  double link_bw_Bps = 0;
  /// pcie: GPUs per PCIe switch (GPUs under one switch talk peer to peer over their own links), each switch's
  /// uplink to its CPU, and, with two NUMA domains, the CPUs' link to each other.
  int gpus_per_switch = 0;
  double switch_bw_Bps = 0;
  int numa_domains = 1;
  double numa_bw_Bps = 0;

  /// Links between local GPUs a and b of a mesh (0: none).
  int links(int a, int b) const;
};

struct ClusterSpec {
  std::string name = "custom";
  AcceleratorSpec accelerator;
  int nodes = 1;
  int gpus_per_node = 8;
  // Inside a node: each GPU's link to the NVSwitch, per direction. A GPU->GPU transfer crosses two such links
  // (source up, destination down), so it pays 2 x nvlink_latency_s.
  double nvlink_bw_Bps = 300e9;
  double nvlink_latency_s = 1e-6;
  // Each GPU's PCIe link to its host, per direction.
  double pcie_bw_Bps = 25e9;
  double pcie_latency_s = 2e-6;
  NodeShape node_links;               ///< NVSwitch unless given
  double host_flops = 1e12;           ///< CPU FLOP/s available to one GPU's offloaded optimizer step
  double host_memory_bytes = 1e12;    ///< per node
  double host_memory_bw_Bps = 200e9;  ///< per node, for the host optimizer step
  double nvme_read_Bps = 25e9;        ///< per node
  double nvme_write_Bps = 12e9;       ///< per node
  // NICs and fabric.
  int nics_per_node = 8;        ///< "rail": one per GPU; fewer are shared by the GPUs of a node
  double nic_bw_Bps = 25e9;     ///< per NIC, per direction
  double nic_latency_s = 1e-6;  ///< per NIC crossed (an inter-node transfer crosses two)
  FabricTopology fabric = FabricTopology::FatTree;
  int switch_radix = 64;             ///< ports per leaf switch: half face NICs, half the spine
  double oversubscription = 1.0;     ///< leaf downlink / uplink bandwidth ratio (1 = full bisection)
  double switch_latency_s = 0.5e-6;  ///< per switch crossed: 1 under one leaf, 3 (leaf, spine, leaf) across leaves
  /// Extra SimGrid configuration ("key" -> "value") applied before the platform is built; defaults are CM02,
  /// TCP-gamma 0, no cross-traffic (see SIMGRID-NOTES). Only the keys and values check_simgrid_config allows.
  std::map<std::string, std::string> simgrid_config;
  /// "nccl": transfers run at the bus bandwidth and per-step latency NCCL achieves on these fabrics (`comm`, by
  /// default the calibrated profile of the accelerator's reference system); "links": at the raw link figures above.
  CommModel comm_model = CommModel::Nccl;
  CommProfile comm;

  /// Stragglers: compute speed relative to the accelerator's, by "node N" (its GPUs) or "gpu N" (one GPU, over its
  /// node's), in (0, 1]; a GPU named nowhere runs at 1. A compute task on a GPU takes its time / its speed; the
  /// slowest member gates each collective and each pipeline exchange as the task graph orders them.
  std::map<std::string, double> slow;
  /// Speeds drawn for every GPU (or node) `slow` does not name: 1 - sigma |z| with z standard normal, seeded; a
  /// spread of 0 draws none.
  struct SpeedSpread {
    double sigma = 0;
    std::uint64_t seed = 1;
    bool per_node = false;  ///< one draw per node (its GPUs alike), else one per GPU
  } speed_spread;
  /// Degraded links: "nic N.R" (node N's NIC on rail R), "rail R" (every NIC of the rail), "nvlink G" (GPU G's NVLink
  /// port), "leaf L" (leaf switch L's uplinks: its spine ports) -> the fraction of the link's bandwidth left, in
  /// [0, 1]; a NIC named both ways takes its own entry. 0 is a link down: a NIC's traffic leaves through the node's
  /// next NIC up (nic_rail), an NVLink's through PCIe; a leaf's uplinks cannot be down.
  std::map<std::string, double> degraded;
  /// Neighbours: the fraction of every link above the leaf switches (leaf uplinks, spine ports) other jobs' traffic
  /// takes, in [0, 0.95]; the job's transfers across leaves get the rest. NIC and NVLink links are the job's own.
  double background_load = 0;
  /// Mixed hardware: the accelerators of the nodes `accelerators` names ("nodes 2-3": "a100-80gb"), each node's index
  /// into `node_kinds` (-1: `accelerator`); empty when every node runs `accelerator`. The fabric (NVLink, NICs) stays
  /// the cluster's.
  std::vector<AcceleratorSpec> node_kinds;
  std::vector<int> node_kind;
  /// The cluster.accelerators entries as given (echoed in reports).
  std::map<std::string, std::string> accelerator_names;
  bool mixed() const { return !node_kind.empty(); }
  const AcceleratorSpec& node_accelerator(int node) const {
    const int k = mixed() ? node_kind[static_cast<std::size_t>(node)] : -1;
    return k < 0 ? accelerator : node_kinds[static_cast<std::size_t>(k)];
  }
  /// Mixed hardware: per GPU, its compute speed relative to the accelerator its pipeline stage is costed on (set for
  /// an experiment by apply_generations; empty: 1 everywhere). Multiplies speed().
  std::vector<double> generation_speed;
  /// Mixed hardware: which accelerator each stage is costed on, and the split chosen (apply_generations).
  std::string mixed_note;
  /// Does any GPU run below the accelerator's speed?
  bool has_stragglers() const { return !slow.empty() || speed_spread.sigma > 0; }
  /// The fraction of a link's bandwidth `degraded` leaves it: NICs by node and rail, NVLinks by GPU; 1 elsewhere.
  double nic_left(int node, int rail) const;
  double nvlink_left(int gpu) const;
  double leaf_left(int leaf) const;
  /// A `degraded` entry's link by the GPU it belongs to: an NVLink's GPU, a NIC's node's first GPU with the NIC's
  /// rail; gpu -1 for a rail or a leaf (no one GPU's). degraded_key writes a link's entry name back ("nic N.R" when
  /// rail >= 0, else "nvlink G").
  struct DegradedLink {
    int gpu = -1;
    int rail = -1;
  };
  DegradedLink degraded_link(const std::string& key) const;
  std::string degraded_key(const DegradedLink& link) const;
  /// Leaf switches of the fabric: switch_radix / 2 ports face NICs; rail-optimized, one leaf per rail of each unit of
  /// switch_radix / 2 nodes; fat-tree, NICs fill leaves in node order (see Fabric).
  int leaf_switches() const;
  /// The rail whose NIC carries node `node`'s traffic of rail `rail`: the rail itself, or when its NIC is down the
  /// next rail up (rail + 1, + 2, ... modulo the rails) whose NIC is not, as NCCL's PXN sends through another GPU's
  /// NIC over NVLink; -1 when every NIC of the node is down.
  int nic_rail(int node, int rail) const;

  int devices() const { return nodes * gpus_per_node; }
  /// The compute speed of GPU `gpu`: its straggler speed (`slow`, else `speed_spread`) times its generation_speed.
  double speed(int gpu) const;
  double straggler_speed(int gpu) const;
};

/// Parses the "cluster" section: a preset name, or an object with optional "preset" and overrides. Errors name the
/// field and value (zero or negative bandwidth, unknown accelerator, impossible NIC count, ...). With `errors`, field
/// errors are collected there (see ObjectReader) and the checks across fields run on those that parsed.
ClusterSpec parse_cluster(const Json& value, ErrorList* errors = nullptr);
/// Checks a cluster built in code (parse_cluster calls it): positive finite bandwidths, latencies >= 0, nodes and
/// gpus_per_node >= 1, a NIC per node when nodes > 1, nics_per_node dividing gpus_per_node, oversubscription >= 1,
/// switch_radix >= 2. Throws InputError naming the field.
void validate_cluster(const ClusterSpec& c);
/// Checks SimGrid settings before SimGrid sees them (it aborts or crashes on some: network/model=Bogus,
/// maxmin/precision=-1): each key must be one placesim passes (simgrid_settings() in Cluster.cpp) and its value one
/// of the key's words or a number in its range. Throws one InputError listing every problem, each naming
/// cluster.simgrid_config.<key>, the value and what is allowed; an unknown key with the nearest known one and the list
/// of them. parse_cluster refuses the same, and a value that is not a string among them.
void check_simgrid_config(const std::map<std::string, std::string>& config);
/// The cluster as the simulator sees its network: with comm_model "nccl", NVLink and NIC links derated to NCCL's
/// achieved bus bandwidth and their latencies set so a ring step pays the measured per-step latency.
ClusterSpec simulated_network(const ClusterSpec& c);
/// "fat-tree" | "rail-optimized", as the input spells them.
std::string to_string(FabricTopology f);
/// "nccl" | "links", as the input spells them.
std::string to_string(CommModel m);
/// The built-in cluster presets (topology/cluster/presets/<name>.json): name and description, by name.
std::vector<std::pair<std::string, std::string>> cluster_preset_list();
/// The cluster echoed in a report.
Json cluster_to_json(const ClusterSpec& c);

}  // namespace placesim
