#pragma once
#include <string>
#include <utility>
#include <vector>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv };
/// Ring and (double binary) tree as NCCL runs them; Nvls = NVLink SHARP (in-switch reduction, all-reduce only).
enum class CollectiveAlgorithm { Ring, Tree, Nvls };

/// Collective performance over one fabric as NCCL achieves it. NCCL's tuner runs every collective with the protocol
/// (and, where it has a choice, the algorithm) its cost model predicts fastest; two protocols are modelled, each a
/// per-step latency and a bandwidth:
///   bandwidth protocol (NCCL's Simple)       step_latency_s + n / (link_bw_Bps * bus_efficiency)
///   low-latency protocol (NCCL's LL, LL128)  ll_step_latency_s + n / (link_bw_Bps * ll_bus_efficiency)
/// for a ring step of n bytes,
/// so small messages are latency-bound, mid-sized ones run at the low-latency protocol's lower bandwidth until the
/// bandwidth protocol's fixed cost pays off, and large ones reach the measured nccl-tests bus bandwidth.
struct FabricProfile {
  std::string name = "custom";
  double link_bw_Bps = 0;          ///< nominal per-GPU, per-direction bandwidth (NVLink total, or one NIC)
  double bus_efficiency = 1;       ///< large-message nccl-tests busbw / link_bw_Bps (protocol overhead)
  double step_latency_s = 0;       ///< alpha: fixed cost of one ring or tree step with the bandwidth protocol
  double ll_bus_efficiency = 0;    ///< low-latency protocol busbw / link_bw_Bps; 0 = not modelled (one protocol)
  double ll_step_latency_s = 0;    ///< fixed cost of one ring or tree step with the low-latency protocol
  double nvls_bus_efficiency = 0;  ///< NVLink SHARP all-reduce busbw / link_bw_Bps; 0 = not available
  double nvls_latency_s = 0;       ///< fixed cost of one NVLink SHARP all-reduce
  std::vector<std::string> sources;

  /// Achieved bandwidth of one ring step for large messages.
  double bus_bw_Bps() const { return link_bw_Bps * bus_efficiency; }
  bool has_low_latency_protocol() const { return ll_bus_efficiency > 0; }
  bool has_nvls() const { return nvls_bus_efficiency > 0; }
};

/// The fabrics a collective can cross: the NVLink/NVSwitch domain of a node and the inter-node network (one NIC per
/// rail). The cluster spec holds one of these.
struct CommProfile {
  FabricProfile intra_node;
  FabricProfile inter_node;
};

/// A built-in fabric (topology/hardware/fabrics/<name>.json: nvlink3/4/5 and their export cuts, ib-hdr, ib-ndr,
/// roce-*). Unknown names name `field` and the nearest one.
FabricProfile fabric_preset(const std::string& name, const std::string& field);
/// The built-in fabrics: name and description.
std::vector<std::pair<std::string, std::string>> fabric_preset_list();

/// Parses a fabric: a preset name, or an object with optional "preset" and the fields of FabricProfile (bandwidths
/// as numbers or strings such as "300GB/s", latencies as numbers or "3us"). Without a preset every field but the
/// NVLS ones is required; negative values are refused.
FabricProfile parse_fabric_profile(const Json& value, const std::string& field);
/// Parses {"intra_node": fabric, "inter_node": fabric}.
CommProfile parse_comm_profile(const Json& value, const std::string& field);
Json fabric_profile_to_json(const FabricProfile& f);

/// The slowest hop of a ring as the bandwidth protocol sees it: its latency and its bottleneck bandwidth. For a fabric
/// alone that is {step_latency_s, bus_bw_Bps()}; the simulator reads them off the platform's routes, so cluster
/// overrides (nvlink_bw, nic_bw, oversubscription) count.
struct RingHop {
  double latency_s = 0;
  double bw_Bps = 0;
};

/// How NCCL would run one collective, and how long it takes.
struct CollectivePlan {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  bool low_latency = false;  ///< with the low-latency protocol (ring or tree)
  double time_s = 0;
};

/// Closed-form time of one collective over `ranks` ranks whose ring's slowest hop is `hop` on fabric `f` (the hop's
/// fabric: the NVLink domain for a group inside one node, the network otherwise). `bytes` follows nccl-tests: the
/// whole buffer for all-reduce, broadcast and reduce; the gathered (full) buffer for all-gather and reduce-scatter;
/// the message for send/recv. With X = bytes, N = ranks and, per protocol, a = the step latency, B = the hop's
/// bandwidth:
///   ring all-reduce                 2(N-1) (a + X/(N B))
///   ring all-gather, reduce-scatter  (N-1) (a + X/(N B))
///   ring broadcast, reduce           (N-1) a + X/B          (pipelined chunks)
///   tree all-reduce                  2 ceil(log2 N) a + 2X/B (reduce up, broadcast down, pipelined)
///   nvls all-reduce                  nvls_latency + 2(N-1)/N X / (link_bw nvls_bus_efficiency)
///   send/recv                        a + X/B
/// The bandwidth protocol uses the hop as given; the low-latency protocol (when the fabric has one) the hop's
/// latency less (step_latency_s - ll_step_latency_s) and its bandwidth times ll_bus_efficiency / bus_efficiency;
/// NVLS scales the hop's bandwidth by nvls_bus_efficiency / bus_efficiency likewise. The plan is the fastest
/// protocol of `algorithm`; Nvls means NVLink SHARP is available, so an all-reduce takes the faster of NVLS and the
/// ring, as NCCL's tuner does. NCCL runs only all-reduce as a tree or with NVLS; other kinds given those algorithms
/// use the ring, as NCCL does. One rank costs nothing. Throws InputError for ranks < 1, negative bytes, or NVLS on a
/// fabric without it.
CollectivePlan plan_collective(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, int ranks,
                               const FabricProfile& f, const RingHop& hop);
/// plan_collective(...).time_s on the fabric's own hop {step_latency_s, bus_bw_Bps()}.
double collective_time_s(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, int ranks,
                         const FabricProfile& f);
/// nccl-tests bus bandwidth of a collective that took `time_s`: bytes/time times 2(N-1)/N (all-reduce), (N-1)/N
/// (all-gather, reduce-scatter) or 1 (others).
double bus_bandwidth_Bps(CollectiveKind kind, double bytes, int ranks, double time_s);

CollectiveKind parse_collective_kind(const std::string& text, const std::string& field);
CollectiveAlgorithm parse_collective_algorithm(const std::string& text, const std::string& field);
std::string to_string(CollectiveKind k);
std::string to_string(CollectiveAlgorithm a);

}  // namespace placesim
