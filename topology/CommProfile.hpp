#pragma once
#include <string>
#include <utility>
#include <vector>

#include "workloads/JsonReader.hpp"

namespace placesim {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv };
/// Ring and (double binary) tree as NCCL runs them; Nvls = NVLink SHARP (in-switch reduction, all-reduce only).
enum class CollectiveAlgorithm { Ring, Tree, Nvls };

/// Collective performance over one fabric as NCCL achieves it: a ring step of n bytes costs
/// step_latency_s + n / (link_bw_Bps * bus_efficiency), so small messages are latency-bound and large ones run at the
/// measured nccl-tests bus bandwidth.
struct FabricProfile {
  std::string name = "custom";
  double link_bw_Bps = 0;           ///< nominal per-GPU, per-direction bandwidth (NVLink total, or one NIC)
  double bus_efficiency = 1;        ///< large-message nccl-tests busbw / link_bw_Bps (protocol overhead)
  double step_latency_s = 0;        ///< alpha: fixed cost of one ring or tree step
  double nvls_bus_efficiency = 0;   ///< NVLink SHARP all-reduce busbw / link_bw_Bps; 0 = not available
  double nvls_latency_s = 0;        ///< fixed cost of one NVLink SHARP all-reduce
  std::vector<std::string> sources;

  /// Achieved bandwidth of one ring step for large messages.
  double bus_bw_Bps() const { return link_bw_Bps * bus_efficiency; }
};

/// The fabrics a collective can cross: the NVLink/NVSwitch domain of a node and the inter-node network (one NIC per
/// rail). The cluster spec holds one of these.
struct CommProfile {
  FabricProfile intra_node;
  FabricProfile inter_node;
};

/// Built-in fabrics: nvlink3 (A100 NVSwitch), nvlink4 (H100/H200 NVSwitch), nvlink5 (B200), ib-hdr (200 Gb/s
/// InfiniBand), ib-ndr (400 Gb/s), roce-100g, roce-200g, roce-400g. Unknown names name `field` and the nearest one.
FabricProfile fabric_preset(const std::string& name, const std::string& field);
std::vector<std::pair<std::string, std::string>> fabric_preset_list();
/// The fabrics of the reference system of an accelerator preset: DGX A100 (nvlink3 + ib-hdr), DGX H100/H200
/// (nvlink4 + ib-ndr), DGX B200 (nvlink5 + ib-ndr). Unknown accelerators get the A100 fabrics' shape with no data:
/// an InputError naming `field`.
CommProfile default_comm_profile(const std::string& accelerator, const std::string& field);

/// Parses a fabric: a preset name, or an object with optional "preset" and the fields of FabricProfile (bandwidths
/// as numbers or strings such as "300GB/s", latencies as numbers or "3us"). Without a preset every field but the
/// NVLS ones is required; negative values are refused.
FabricProfile parse_fabric_profile(const Json& value, const std::string& field);
/// Parses {"intra_node": fabric, "inter_node": fabric}.
CommProfile parse_comm_profile(const Json& value, const std::string& field);
Json fabric_profile_to_json(const FabricProfile& f);

/// Closed-form time of one collective over `ranks` ranks, all on fabric `f`. `bytes` follows nccl-tests: the whole
/// buffer for all-reduce, broadcast and reduce; the gathered (full) buffer for all-gather and reduce-scatter; the
/// message for send/recv. With X = bytes, N = ranks, B = f.bus_bw_Bps(), a = f.step_latency_s:
///   ring all-reduce                 2(N-1) (a + X/(N B))
///   ring all-gather, reduce-scatter  (N-1) (a + X/(N B))
///   ring broadcast, reduce           (N-1) a + X/B          (pipelined chunks)
///   tree all-reduce                  2 ceil(log2 N) a + 2X/B (reduce up, broadcast down, pipelined)
///   nvls all-reduce                  nvls_latency + 2(N-1)/N X / (link_bw nvls_bus_efficiency)
///   send/recv                        a + X/B
/// NCCL runs only all-reduce as a tree or with NVLS; other kinds given those algorithms use the ring, as NCCL does.
/// One rank costs nothing. Throws InputError for ranks < 1, negative bytes, or NVLS on a fabric without it.
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
