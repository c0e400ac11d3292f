#include "topology/hardware/CommProfile.hpp"

#include <cmath>
#include <map>

#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

// Fitted by `placesim calibrate` (scripts/refit_profiles.py) to the nccl-tests curves in
// topology/profiles/measurements/ (residuals in topology/profiles/*.json): both protocols of NVLink 3 (A100) and 5
// (GB200); NVLS and the low-latency ring of NVLink 4 (H100), whose bandwidth-protocol ring is NVIDIA's quoted figure.
constexpr double kNvlink3Efficiency = 0.7718, kNvlink3Latency = 1.401e-5;
constexpr double kNvlink3LlEfficiency = 0.4266, kNvlink3LlLatency = 3.025e-6;
constexpr double kNvlink4Efficiency = 0.8222, kNvlink4Latency = 3.103e-6;  // 370 / 450 GB/s (nccl-tests #212)
constexpr double kNvlink4LlEfficiency = 0.01507, kNvlink4LlLatency = 1.807e-6;
constexpr double kNvlink4NvlsEfficiency = 1.048, kNvlink4NvlsLatency = 8.171e-5;
constexpr double kNvlink5Efficiency = 0.7265, kNvlink5Latency = 5.723e-6;
constexpr double kNvlink5LlEfficiency = 0.2797, kNvlink5LlLatency = 2.696e-6;

// A fabric with the bandwidth protocol only; the fitted ones add their low-latency protocol and NVLS below.
FabricProfile fabric(const char* name, double link_bw_Bps, double efficiency, double latency_s,
                     std::vector<std::string> sources) {
  FabricProfile f;
  f.name = name;
  f.link_bw_Bps = link_bw_Bps;
  f.bus_efficiency = efficiency;
  f.step_latency_s = latency_s;
  f.sources = std::move(sources);
  return f;
}

FabricProfile with_low_latency(FabricProfile f, double efficiency, double latency_s) {
  f.ll_bus_efficiency = efficiency;
  f.ll_step_latency_s = latency_s;
  return f;
}

FabricProfile with_nvls(FabricProfile f, double efficiency, double latency_s) {
  f.nvls_bus_efficiency = efficiency;
  f.nvls_latency_s = latency_s;
  return f;
}

// NCCL's own cost model (src/graph/tuning.cc, NCCL 2.7-2.8) charges a ring step with the Simple protocol 3.4 us over
// NVLink and 9.6 us over the network; the NVLink values below are fitted to whole nccl-tests curves instead (see
// topology/profiles/measurements/), the network ones keep NCCL's figure for lack of a published curve.
const char* kNcclTuning =
    "NCCL src/graph/tuning.cc (NCCL 2.7/2.8): hwLat ring/Simple 3.4 us NVLink, 9.6 us network; "
    "A100 ring busbw capped at 235 GB/s";
const char* kAzureA100 =
    "Azure/AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md, 'NCCL Bandwidth' table: "
    "all-reduce busbw, 8x A100-SXM4-80GB, NCCL 2.18.5, 1 KB - 8 GB";
const char* kAzureH100 =
    "Azure/AI-benchmarking-guide, 'Azure Results/ND_H100_v5_results.md', 'NCCL Bandwidth' table: "
    "all-reduce (NVLS) busbw, 8x H100 80GB HBM3, 1 KB - 8 GB";
const char* kNvlinkH100Ring =
    "NVIDIA/nccl-tests issue #212 (S. Jeaugey, NVIDIA, 2024-05-06): NVLink4 line rate "
    "450 GB/s, ring busbw ~370 GB/s (~20% protocol overhead), NVLS all-reduce ~480 GB/s";
const char* kAzureGB200 =
    "Azure/AI-benchmarking-guide, Azure_Results/ND_GB200_v6_results.md, 'NCCL Bandwidth' "
    "table: all-reduce (ring) busbw, 4x GB200 NVLink5, NCCL 2.25.1, 1 KB - 8 GB";
const char* kIbHdr =
    "NVIDIA/nccl-tests issue #160 (S. Jeaugey, 2023-08-01): rings over InfiniBand reach ~24 GB/s "
    "busbw per 200 Gb/s (25 GB/s) NIC on well-configured systems";
const char* kIbNdr =
    "NVIDIA/nccl-tests issues #290 (AddyLaddy, NCCL maintainer, 2025-03-03: 'For NDR @ 400Gbps you should see "
    "46-48GB/s per NIC') and #267 (2025-01-23: 'CX-7 NICs at NDR rate (400Gbps) should achieve up to 48-49GB/s per "
    "NIC'): 48 of 50 GB/s, HDR's 24 of 25";
const char* kRoce =
    "NVIDIA/nccl issue #495 (2021-04): 2 nodes x 8 A100 with 8x100 Gb/s RoCE reach 600 Gb/s busbw of "
    "800 Gb/s; NVIDIA: 'roughly matching our expectation (though lower by a little bit)'";

const std::map<std::string, std::pair<FabricProfile, std::string>>& presets() {
  static const std::map<std::string, std::pair<FabricProfile, std::string>> table = {
      {"nvlink3",
       {with_low_latency(fabric("nvlink3", 300e9, kNvlink3Efficiency, kNvlink3Latency, {kAzureA100, kNcclTuning}),
                         kNvlink3LlEfficiency, kNvlink3LlLatency),
        "NVLink 3 + NVSwitch (DGX A100), 300 GB/s per GPU per direction"}},
      {"nvlink4",
       {with_nvls(with_low_latency(fabric("nvlink4", 450e9, kNvlink4Efficiency, kNvlink4Latency,
                                          {kNvlinkH100Ring, kAzureH100, kAzureA100}),
                                   kNvlink4LlEfficiency, kNvlink4LlLatency),
                  kNvlink4NvlsEfficiency, kNvlink4NvlsLatency),
        "NVLink 4 + NVSwitch (DGX H100/H200), 450 GB/s per GPU per direction, NVLink SHARP"}},
      {"nvlink5",
       {with_low_latency(fabric("nvlink5", 900e9, kNvlink5Efficiency, kNvlink5Latency, {kAzureGB200}),
                         kNvlink5LlEfficiency, kNvlink5LlLatency),
        "NVLink 5 (B200/GB200), 900 GB/s per GPU per direction"}},
      {"ib-hdr",
       {fabric("ib-hdr", 25e9, 24.0 / 25.0, 9.6e-6, {kIbHdr, kNcclTuning}), "HDR InfiniBand, 200 Gb/s per NIC"}},
      {"ib-ndr",
       {fabric("ib-ndr", 50e9, 24.0 / 25.0, 9.6e-6, {kIbNdr, kNcclTuning}), "NDR InfiniBand, 400 Gb/s per NIC"}},
      {"roce-100g", {fabric("roce-100g", 12.5e9, 0.75, 9.6e-6, {kRoce, kNcclTuning}), "RoCE v2, 100 Gb/s NIC"}},
      {"roce-200g", {fabric("roce-200g", 25e9, 0.75, 9.6e-6, {kRoce, kNcclTuning}), "RoCE v2, 200 Gb/s NIC"}},
      {"roce-400g", {fabric("roce-400g", 50e9, 0.75, 9.6e-6, {kRoce, kNcclTuning}), "RoCE v2, 400 Gb/s NIC"}},
  };
  return table;
}

}  // namespace

FabricProfile fabric_preset(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it == presets().end())
    refuse_name(field, name, "a known fabric", names_of(presets()), " (see fabric_preset_list)");
  return it->second.first;
}

std::vector<std::pair<std::string, std::string>> fabric_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.second);
  return out;
}

namespace {

// An export variant's NVLink: the die's own NVLink preset (its NCCL efficiencies) cut to kNvlinkCutBps.
FabricProfile cut_nvlink(const char* preset, const char* name, const std::string& field) {
  FabricProfile nvlink = fabric_preset(preset, field);
  nvlink.name = name;
  nvlink.link_bw_Bps = kNvlinkCutBps;
  return nvlink;
}

}  // namespace

CommProfile default_comm_profile(const std::string& accelerator, const std::string& field) {
  if (accelerator == "a100-40gb" || accelerator == "a100-80gb")
    return {fabric_preset("nvlink3", field), fabric_preset("ib-hdr", field)};
  if (accelerator == "a800") return {cut_nvlink("nvlink3", "nvlink3-a800", field), fabric_preset("ib-hdr", field)};
  if (accelerator == "h100-sxm" || accelerator == "h200")
    return {fabric_preset("nvlink4", field), fabric_preset("ib-ndr", field)};
  if (accelerator == "h800") return {cut_nvlink("nvlink4", "nvlink4-h800", field), fabric_preset("ib-ndr", field)};
  if (accelerator == "b200" || accelerator == "gb200")
    return {fabric_preset("nvlink5", field), fabric_preset("ib-ndr", field)};
  throw InputError(field + "=" + accelerator + " has no default fabrics; give the comm profile explicitly");
}

FabricProfile parse_fabric_profile(const Json& value, const std::string& field) {
  if (value.is_string()) return fabric_preset(value.get<std::string>(), field);
  ObjectReader r(value, field);
  FabricProfile f;
  bool base = r.has("preset");
  if (base)
    f = fabric_preset(r.get_string("preset", ""), r.field("preset"));
  else
    for (const char* key : {"link_bw", "bus_efficiency", "step_latency"}) r.require(key);
  f.name = r.get_string("name", f.name);
  f.link_bw_Bps = r.get_positive("link_bw", f.link_bw_Bps, parse_bandwidth);
  f.bus_efficiency = r.get_fraction("bus_efficiency", f.bus_efficiency);
  f.step_latency_s = r.get_non_negative("step_latency", f.step_latency_s, parse_time);
  f.ll_bus_efficiency = r.get_non_negative("ll_bus_efficiency", f.ll_bus_efficiency);
  r.check(f.ll_bus_efficiency <= 1, "ll_bus_efficiency", "must be in [0, 1] (0 = none)");
  f.ll_step_latency_s = r.get_non_negative("ll_step_latency", f.ll_step_latency_s, parse_time);
  f.nvls_bus_efficiency = r.get_non_negative("nvls_bus_efficiency", f.nvls_bus_efficiency);
  f.nvls_latency_s = r.get_non_negative("nvls_latency", f.nvls_latency_s, parse_time);
  f.sources = r.get_strings("sources", f.sources);
  r.finish();
  return f;
}

CommProfile parse_comm_profile(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  CommProfile c;
  for (auto [key, target] : {std::pair{"intra_node", &c.intra_node}, {"inter_node", &c.inter_node}})
    *target = parse_fabric_profile(r.require(key), r.field(key));
  r.finish();
  return c;
}

Json fabric_profile_to_json(const FabricProfile& f) {
  Json j{{"name", f.name},
         {"link_bw", f.link_bw_Bps},
         {"bus_efficiency", f.bus_efficiency},
         {"step_latency", f.step_latency_s},
         {"ll_bus_efficiency", f.ll_bus_efficiency},
         {"ll_step_latency", f.ll_step_latency_s},
         {"nvls_bus_efficiency", f.nvls_bus_efficiency},
         {"nvls_latency", f.nvls_latency_s}};
  j["sources"] = f.sources;
  return j;
}

namespace {

// One protocol's time for a collective whose slowest ring hop has latency a and bandwidth B.
double protocol_time_s(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, double n, double a, double B) {
  if (kind == CollectiveKind::AllReduce && algorithm == CollectiveAlgorithm::Tree)
    return 2.0 * std::ceil(std::log2(n)) * a + 2.0 * bytes / B;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return 2.0 * (n - 1) * (a + bytes / (n * B));
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      return (n - 1) * (a + bytes / (n * B));
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
      return (n - 1) * a + bytes / B;
    case CollectiveKind::SendRecv:
      return a + bytes / B;
  }
  return 0;
}

}  // namespace

CollectivePlan plan_collective(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, int ranks,
                               const FabricProfile& f, const RingHop& hop) {
  if (ranks < 1) throw InputError("collective over ranks=" + std::to_string(ranks) + ": need at least one rank");
  if (!(bytes >= 0)) throw InputError("collective of bytes=" + format_significant(bytes) + ": must not be negative");
  const bool nvls = algorithm == CollectiveAlgorithm::Nvls;
  if (nvls && !f.has_nvls()) throw InputError("fabric " + f.name + " has no NVLink SHARP (nvls_bus_efficiency=0)");
  if (ranks == 1) return {algorithm, false, 0};
  const double n = ranks;
  // NVLS stands for "NVLS available": the rings below compete with it.
  const CollectiveAlgorithm shape = nvls ? CollectiveAlgorithm::Ring : algorithm;
  CollectivePlan best{shape, false, protocol_time_s(kind, shape, bytes, n, hop.latency_s, hop.bw_Bps)};
  if (f.has_low_latency_protocol()) {
    const double a = std::max(0.0, hop.latency_s - (f.step_latency_s - f.ll_step_latency_s));
    const double t = protocol_time_s(kind, shape, bytes, n, a, hop.bw_Bps * f.ll_bus_efficiency / f.bus_efficiency);
    if (t < best.time_s) best = {shape, true, t};
  }
  if (nvls && kind == CollectiveKind::AllReduce) {
    const double t =
        f.nvls_latency_s + 2.0 * (n - 1) / n * bytes / (hop.bw_Bps * f.nvls_bus_efficiency / f.bus_efficiency);
    if (t < best.time_s) best = {CollectiveAlgorithm::Nvls, false, t};
  }
  return best;
}

double collective_time_s(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, int ranks,
                         const FabricProfile& f) {
  return plan_collective(kind, algorithm, bytes, ranks, f, RingHop{f.step_latency_s, f.bus_bw_Bps()}).time_s;
}

double bus_bandwidth_Bps(CollectiveKind kind, double bytes, int ranks, double time_s) {
  const double n = ranks, algbw = bytes / time_s;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return algbw * 2.0 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      return algbw * (n - 1) / n;
    default:
      return algbw;
  }
}

CollectiveKind parse_collective_kind(const std::string& text, const std::string& field) {
  static const std::map<std::string, CollectiveKind> names = {{"all-reduce", CollectiveKind::AllReduce},
                                                              {"all-gather", CollectiveKind::AllGather},
                                                              {"reduce-scatter", CollectiveKind::ReduceScatter},
                                                              {"broadcast", CollectiveKind::Broadcast},
                                                              {"reduce", CollectiveKind::Reduce},
                                                              {"send-recv", CollectiveKind::SendRecv}};
  auto it = names.find(text);
  if (it != names.end()) return it->second;
  std::vector<std::string> keys;
  for (const auto& [k, v] : names) keys.push_back(k);
  std::string guess = nearest(text, keys);
  throw InputError(field + "=" + text + " is not a collective" +
                   (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
}

CollectiveAlgorithm parse_collective_algorithm(const std::string& text, const std::string& field) {
  if (text == "ring") return CollectiveAlgorithm::Ring;
  if (text == "tree") return CollectiveAlgorithm::Tree;
  if (text == "nvls") return CollectiveAlgorithm::Nvls;
  throw InputError(field + "=" + text + " is not a collective algorithm (ring, tree, nvls)");
}

std::string to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all-reduce";
    case CollectiveKind::AllGather:
      return "all-gather";
    case CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Reduce:
      return "reduce";
    case CollectiveKind::SendRecv:
      return "send-recv";
  }
  return "?";
}

std::string to_string(CollectiveAlgorithm a) {
  return a == CollectiveAlgorithm::Ring ? "ring" : a == CollectiveAlgorithm::Tree ? "tree" : "nvls";
}

}  // namespace placesim
