#include "topology/cluster/Cluster.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <optional>

#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

// Upper bounds of the numeric fields, past which a figure is a unit mistake and the step it gives absurd (1e300
// oversubscription made a step of 7e295 s). A node is one NVLink domain: 8 GPUs in a DGX, 72 in a GB200 NVL72 rack,
// 576 in the largest announced (NVL576). Fabrics are built at 1:1 to 8:1 leaf oversubscription. Link latencies are
// microseconds; a link between continents takes 0.1 s. (Bandwidths have none: a huge one makes transfers vanish,
// which tests use; a tiny one is refused by the longest transfer simulate estimates.)
constexpr int kMaxGpusPerNode = 1024;
constexpr double kMaxOversubscription = 64, kMaxLatencySeconds = 1;

constexpr EnumName<FabricTopology> kFabricTopologyNames[] = {{FabricTopology::FatTree, "fat-tree"},
                                                             {FabricTopology::RailOptimized, "rail-optimized"}};
constexpr EnumName<CommModel> kCommModelNames[] = {{CommModel::Nccl, "nccl"}, {CommModel::Links, "links"}};

// DGX A100 (NVIDIA DGX A100 data sheet and user guide): 8x A100 SXM4 80GB; third-generation NVLink through six
// NVSwitches, 600 GB/s bidirectional per GPU = 300 GB/s per direction; PCIe Gen4 x16 to the host (31.5 GB/s raw
// per direction, ~25 GB/s effective); 8 single-port ConnectX-6 HDR InfiniBand NICs at 200 Gb/s (one per GPU,
// "rails"); 2 TB host memory; dual AMD EPYC 7742 (2 x 64 cores, 2.25 GHz, 32 FP32 FLOP/cycle/core with two 256-bit
// FMA pipes = 9.2 TFLOP/s per node, 1.15e12 per GPU share); 8x 3.84 TB U.2 NVMe (PCIe Gen4) as RAID-0 data cache.
// ConnectX-6 data sheet: sub-600 ns latency; Quantum QM8700/QM8790 HDR switches: 40 ports, 130 ns port-to-port.
// Assumptions, not data-sheet numbers: NVLink hop latency 0.5 us, PCIe latency 1 us, per-drive NVMe throughput of a
// typical Gen4 U.2 data-centre drive (6.5 GB/s read, 3.5 GB/s write).
ClusterSpec dgx_a100() {
  ClusterSpec c;
  c.name = "dgx-a100";
  c.accelerator = accelerator_preset("a100-80gb", "cluster.accelerator");
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.nvlink_bw_Bps = 300e9;
  c.nvlink_latency_s = 0.5e-6;
  c.pcie_bw_Bps = 25e9;
  c.pcie_latency_s = 1e-6;
  c.host_flops = 2 * 64 * 2.25e9 * 32 / 8;
  c.host_memory_bytes = 2e12;
  c.nvme_read_Bps = 8 * 6.5e9;
  c.nvme_write_Bps = 8 * 3.5e9;
  c.nics_per_node = 8;
  c.nic_bw_Bps = 200e9 / 8;
  c.nic_latency_s = 0.6e-6;
  c.fabric = FabricTopology::RailOptimized;
  c.switch_radix = 40;
  c.oversubscription = 1.0;
  c.switch_latency_s = 130e-9;
  return c;
}

// DGX H100 (NVIDIA DGX H100 data sheet): 8x H100 SXM5 80GB; fourth-generation NVLink through four NVSwitches,
// 900 GB/s bidirectional per GPU = 450 GB/s per direction; PCIe Gen5 x16 (63 GB/s raw per direction, ~50 GB/s
// effective); 8 ConnectX-7 NICs at 400 Gb/s NDR InfiniBand; 2 TB host memory; dual Xeon Platinum 8480C
// (2 x 56 cores, 2.0 GHz, 64 FP32 FLOP/cycle/core with two AVX-512 FMA units = 14.3 TFLOP/s per node);
// 8x 3.84 TB U.2 NVMe data cache. Quantum-2 QM9700 NDR switches: 64 ports at 400 Gb/s (so 32 nodes per rail
// leaf, the DGX H100 SuperPOD scalable unit). Latencies as for dgx-a100 (assumed, not from the data sheets).
ClusterSpec dgx_h100() {
  ClusterSpec c = dgx_a100();
  c.name = "dgx-h100";
  c.accelerator = accelerator_preset("h100-sxm", "cluster.accelerator");
  c.nvlink_bw_Bps = 450e9;
  c.pcie_bw_Bps = 50e9;
  c.host_flops = 2 * 56 * 2.0e9 * 64 / 8;
  c.nic_bw_Bps = 400e9 / 8;
  c.switch_radix = 64;
  return c;
}

// DGX B200 (NVIDIA DGX B200 data sheet): 8x B200; fifth-generation NVLink through two NVSwitch chips, 1.8 TB/s
// bidirectional per GPU = 900 GB/s per direction (14.4 TB/s aggregate); 8 single-port ConnectX-7 NICs at 400 Gb/s
// (one per GPU); PCIe Gen5 to the host (~50 GB/s effective per direction, as dgx-h100); 2 TB host memory; dual Xeon
// Platinum 8570 (2 x 56 cores, 2.1 GHz, 64 FP32 FLOP/cycle/core with two AVX-512 FMA units); 8x 3.84 TB U.2 NVMe.
// Switches and latencies as for dgx-h100 (Quantum-2 NDR; latencies assumed, not from the data sheets).
ClusterSpec dgx_b200() {
  ClusterSpec c = dgx_h100();
  c.name = "dgx-b200";
  c.accelerator = accelerator_preset("b200", "cluster.accelerator");
  c.nvlink_bw_Bps = 900e9;
  c.host_flops = 2 * 56 * 2.1e9 * 64 / 8;
  return c;
}

// GB200 NVL72 (NVIDIA GB200 NVL72 product page and data sheet): 72 Blackwell GPUs and 36 Grace CPUs in 18 compute
// trays, all 72 GPUs in one NVLink domain (fifth-generation NVLink Switch System, 1.8 TB/s bidirectional per GPU =
// 900 GB/s per direction, 130 TB/s in all), so one node here is one rack of 72 GPUs. Each GB200 superchip joins one
// Grace to two GPUs over NVLink-C2C (900 GB/s bidirectional): 450 GB/s per direction shared by two GPUs = 225 GB/s per
// GPU to the host. Host per Grace: up to 480 GB LPDDR5X at up to 512 GB/s, 72 Neoverse V2 cores. One ConnectX-7
// 400 Gb/s NIC per GPU (4 per compute tray). The GPUs are the gb200 preset, fitted to GB200 component measurements.
// Assumptions, not data-sheet numbers: Grace at 3.1 GHz x 32 FP32 FLOP/cycle/core (four 128-bit FMA pipes); NVMe,
// switches and latencies as for dgx-b200. gb200_rack: one NVLink domain of `gpus` GB200 GPUs (two per Grace), the
// rack of gb200-nvl72 or the half of one of gb200-nvl36.
ClusterSpec gb200_rack(const char* name, int gpus) {
  ClusterSpec c = dgx_b200();
  c.name = name;
  c.accelerator = accelerator_preset("gb200", "cluster.accelerator");
  c.gpus_per_node = gpus;
  c.nics_per_node = gpus;
  c.pcie_bw_Bps = 450e9 / 2;
  const double graces = gpus / 2.0;
  c.host_flops = graces * 72 * 3.1e9 * 32 / gpus;
  c.host_memory_bytes = graces * 480e9;
  c.host_memory_bw_Bps = graces * 512e9;
  return c;
}

ClusterSpec gb200_nvl72() {
  return gb200_rack("gb200-nvl72", 72);
}

// GB200 NVL36: half the rack's compute trays (9 trays x 4 GPUs) in one NVLink5 domain of 36 GPUs, each GPU as in
// gb200-nvl72 (NVL36x2 joins two such racks by InfiniBand here: one node per 36-GPU domain).
ClusterSpec gb200_nvl36() {
  return gb200_rack("gb200-nvl36", 36);
}

// DGX H200 (NVIDIA DGX H200 data sheet): the DGX H100 node with H200 GPUs (141 GB HBM3e, 4.8 TB/s); NVLink4, NICs,
// host and switches as dgx-h100.
ClusterSpec dgx_h200() {
  ClusterSpec c = dgx_h100();
  c.name = "dgx-h200";
  c.accelerator = accelerator_preset("h200", "cluster.accelerator");
  return c;
}

// A mesh node of `gpus` GPUs, every pair joined by `links` links of `link_bw_Bps` each.
NodeShape full_mesh(int gpus, int links, double link_bw_Bps) {
  NodeShape n;
  n.kind = NodeLinks::Mesh;
  n.link_bw_Bps = link_bw_Bps;
  for (int a = 0; a < gpus; ++a)
    for (int b = a + 1; b < gpus; ++b) n.pairs.push_back({a, b, links});
  return n;
}

// AMD Instinct MI300X platform (8 OAMs, as Azure ND MI300X v5 and the OEM servers): each pair of GPUs joined by one
// Infinity Fabric link of 64 GB/s per direction, no switch (ROCm MI300 architecture docs; AMD's RCCL/xGMI blog);
// eight 400 Gb/s NICs, PCIe Gen5 and the dual Xeon Platinum 8480C host as dgx-h100 (Azure ND MI300X v5 has that CPU).
ClusterSpec amd_mi300x() {
  ClusterSpec c = dgx_h100();
  c.name = "amd-mi300x";
  c.accelerator = accelerator_preset("mi300x", "cluster.accelerator");
  c.nvlink_bw_Bps = 448e9;  // the seven links together: the xgmi-mi300x fabric's link_bw
  c.node_links = full_mesh(c.gpus_per_node, 1, 64e9);
  return c;
}

// PCIe servers of 8 GPUs (the common 4U design: two CPU sockets, two PCIe Gen4/Gen5 switches per socket, two GPUs per
// switch). Assumptions, not data-sheet numbers: the switch's uplink at one x16 link, the sockets' link (UPI or
// Infinity Fabric) at 64 GB/s per direction; NICs, host and latencies as the DGX node of the generation.
NodeShape pcie_server(double switch_bw_Bps) {
  NodeShape n;
  n.kind = NodeLinks::Pcie;
  n.gpus_per_switch = 2;
  n.switch_bw_Bps = switch_bw_Bps;
  n.numa_domains = 2;
  n.numa_bw_Bps = 64e9;
  return n;
}

// 8x A100 80GB PCIe, no NVLink bridges (NVIDIA A100 data sheet: PCIe Gen4 64 GB/s bidirectional = 32 per direction,
// ~25 GB/s effective as dgx-a100's PCIe).
ClusterSpec pcie_a100() {
  ClusterSpec c = dgx_a100();
  c.name = "pcie-a100";
  c.accelerator = accelerator_preset("a100-80gb-pcie", "cluster.accelerator");
  c.node_links = pcie_server(25e9);
  return c;
}

// 8x H100 PCIe with NVLink bridges joining GPUs in pairs (0-1, 2-3, 4-5, 6-7; NVIDIA H100 data sheet: 600 GB/s
// bidirectional per bridged pair = 300 GB/s per direction, three bridges); other pairs over PCIe Gen5 through the host.
ClusterSpec pcie_h100_nvlink_pairs() {
  ClusterSpec c = dgx_h100();
  c.name = "pcie-h100-nvlink-pairs";
  c.accelerator = accelerator_preset("h100-pcie", "cluster.accelerator");
  c.node_links.kind = NodeLinks::Mesh;
  c.node_links.link_bw_Bps = 100e9;
  for (int a = 0; a < c.gpus_per_node; a += 2) c.node_links.pairs.push_back({a, a + 1, 3});
  return c;
}

// The export variants of a DGX node: `base` with `accelerator`, whose NVLink is cut to 400 GB/s bidirectional (its
// reference fabric's link_bw per direction), and nothing else changed.
ClusterSpec nvlink_cut_node(ClusterSpec c, const char* name, const char* accelerator) {
  c.name = name;
  c.accelerator = accelerator_preset(accelerator, "cluster.accelerator");
  c.nvlink_bw_Bps = c.accelerator.intra_node_fabric->link_bw_Bps;
  return c;
}

// HGX A800: the DGX A100 node with A800 GPUs (the cut: NVIDIA's statement to Reuters, 2022-11-08); 8x HDR 200 Gb/s
// rails as dgx-a100 (the servers of Chinese clusters built on A800 vary: give nics_per_node and nic_bw when they
// differ).
ClusterSpec hgx_a800() {
  return nvlink_cut_node(dgx_a100(), "hgx-a800", "a800");
}

// HGX H800: the DGX H100 node with H800 GPUs (the cut: the figure papers' testbeds give, e.g. DeepSeek-V3's; no
// NVIDIA document found); 8x 400 Gb/s NICs as DeepSeek-V3 describes its cluster.
ClusterSpec hgx_h800() {
  return nvlink_cut_node(dgx_h100(), "hgx-h800", "h800");
}

// Selene, NVIDIA's DGX SuperPOD (TOP500 November 2020: 560 DGX A100 nodes, 4,480 A100 GPUs, HDR InfiniBand).
// SuperPOD reference architecture: scalable units of 20 nodes; in each unit rail r of every node goes to leaf
// switch r (40-port QM8790: 20 ports down, 20 up), and a full-bisection fat-tree of spines joins the leaves.
ClusterSpec selene() {
  ClusterSpec c = dgx_a100();
  c.name = "selene";
  c.nodes = 560;
  return c;
}

struct Preset {
  ClusterSpec (*make)();
  const char* description;
};

const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> table = {
      {"dgx-a100", {dgx_a100, "NVIDIA DGX A100 nodes: 8x A100 80GB, NVLink3 300 GB/s, 8x HDR 200 Gb/s rails (1 node)"}},
      {"dgx-h100", {dgx_h100, "NVIDIA DGX H100 nodes: 8x H100 SXM, NVLink4 450 GB/s, 8x NDR 400 Gb/s rails (1 node)"}},
      {"dgx-b200", {dgx_b200, "NVIDIA DGX B200 nodes: 8x B200, NVLink5 900 GB/s, 8x NDR 400 Gb/s rails (1 node)"}},
      {"gb200-nvl72",
       {gb200_nvl72,
        "NVIDIA GB200 NVL72 racks: 72 GB200 GPUs in one NVLink5 domain, 900 GB/s, 72x NDR 400 Gb/s rails (1 rack)"}},
      {"gb200-nvl36",
       {gb200_nvl36,
        "NVIDIA GB200 NVL36: 36 GB200 GPUs in one NVLink5 domain, 900 GB/s, 36x NDR 400 Gb/s rails (1 domain)"}},
      {"amd-mi300x",
       {amd_mi300x,
        "AMD Instinct MI300X platform: 8x MI300X, each pair joined by one 64 GB/s Infinity Fabric link (no switch), "
        "8x NDR 400 Gb/s rails (1 node)"}},
      {"dgx-h200",
       {dgx_h200, "NVIDIA DGX H200 nodes: 8x H200 141GB, NVLink4 450 GB/s, 8x NDR 400 Gb/s rails (1 node)"}},
      {"hgx-a800",
       {hgx_a800, "HGX A800 nodes: 8x A800 80GB, NVLink 200 GB/s per direction, 8x HDR 200 Gb/s rails (1 node)"}},
      {"hgx-h800",
       {hgx_h800, "HGX H800 nodes: 8x H800, NVLink 200 GB/s per direction, 8x NDR 400 Gb/s rails (1 node)"}},
      {"pcie-a100",
       {pcie_a100,
        "8x A100 80GB PCIe servers: no NVLink, GPUs in pairs under 4 PCIe Gen4 switches, 2 sockets, 8x HDR "
        "200 Gb/s rails (1 node)"}},
      {"pcie-h100-nvlink-pairs",
       {pcie_h100_nvlink_pairs,
        "8x H100 PCIe servers: NVLink bridges join GPUs in pairs (300 GB/s), other pairs over "
        "PCIe Gen5; 8x NDR 400 Gb/s rails (1 node)"}},
      {"selene", {selene, "NVIDIA Selene SuperPOD: 560 DGX A100, rail-optimized full-bisection HDR fat-tree"}},
  };
  return table;
}

ClusterSpec cluster_preset(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it != presets().end()) return it->second.make();
  refuse_name(field, name, "a known cluster", names_of(presets()), known_names(names_of(presets())));
}

// "node_links": {"kind": "nvswitch"} (the default), {"kind": "mesh", "link_bw", "pairs": [[a, b, links], ...] or
// "full": links} or {"kind": "pcie", "gpus_per_switch", "switch_bw", "numa_domains"?, "numa_bw"?}.
void read_node_links(ObjectReader& parent, ClusterSpec& c) {
  const Json* value = parent.child("node_links");
  if (!value) return;
  ObjectReader r(*value, parent.field("node_links"), parent.errors());
  NodeShape n;
  const std::string kind = r.get_choice("kind", {"nvswitch", "mesh", "pcie"}, "");
  if (kind.empty()) throw InputError(r.field("kind") + " is required: nvswitch, mesh or pcie");
  n.kind = kind == "mesh" ? NodeLinks::Mesh : kind == "pcie" ? NodeLinks::Pcie : NodeLinks::NvSwitch;
  if (n.kind == NodeLinks::Mesh) {
    // Point-to-point links between every pair: machines hold up to 8 GPUs so; 64 bounds the pair table.
    if (c.gpus_per_node > 64)
      throw InputError(r.path() + ": a mesh of cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) +
                       " GPUs has too many pairs; a mesh node holds at most 64");
    n.link_bw_Bps = r.get_positive("link_bw", 0, parse_bandwidth);
    if (!(n.link_bw_Bps > 0)) throw InputError(r.field("link_bw") + " is required for a mesh: one link's bandwidth");
    if (r.has("full") == r.has("pairs"))
      throw InputError(r.path() + " needs exactly one of full (links between every pair) and pairs ([a, b, links])");
    if (r.has("full")) {
      n.pairs = full_mesh(c.gpus_per_node, static_cast<int>(r.get_int_in("full", 1, 1)), n.link_bw_Bps).pairs;
    } else {
      const Json& list = *r.child("pairs");
      if (!list.is_array()) throw InputError(r.field("pairs") + " must be a list of [a, b, links]");
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = r.field("pairs") + "[" + std::to_string(i) + "]";
        const Json& p = list[i];
        if (!p.is_array() || p.size() != 3 ||
            !std::all_of(p.begin(), p.end(), [](const Json& x) { return x.is_number_integer(); }))
          throw InputError(at + "=" + show(p) + " must be [a, b, links]: two local GPU indices and a link count");
        const int a = p[0].get<int>(), b = p[1].get<int>(), links = p[2].get<int>();
        if (a < 0 || b < 0 || a >= c.gpus_per_node || b >= c.gpus_per_node || a == b || links < 1)
          throw InputError(at + "=" + show(p) + " must join two different GPUs of 0.." +
                           std::to_string(c.gpus_per_node - 1) + " by at least one link");
        if (n.links(a, b) > 0) throw InputError(at + "=" + show(p) + " repeats the pair");
        n.pairs.push_back({std::min(a, b), std::max(a, b), links});
      }
    }
  } else if (n.kind == NodeLinks::Pcie) {
    n.gpus_per_switch = static_cast<int>(r.get_int_in("gpus_per_switch", c.gpus_per_node, 1));
    r.check(c.gpus_per_node % n.gpus_per_switch == 0, "gpus_per_switch",
            "must divide cluster.gpus_per_node=" + std::to_string(c.gpus_per_node));
    n.switch_bw_Bps = r.get_positive("switch_bw", c.pcie_bw_Bps, parse_bandwidth);
    n.numa_domains = static_cast<int>(r.get_int_in("numa_domains", 1, 1));
    const int switches = c.gpus_per_node / n.gpus_per_switch;
    r.check(n.numa_domains <= 2 && switches % n.numa_domains == 0, "numa_domains",
            "must be 1 or 2 and divide the node's " + std::to_string(switches) + " PCIe switches");
    if (n.numa_domains == 2) {
      n.numa_bw_Bps = r.get_positive("numa_bw", 0, parse_bandwidth);
      if (!(n.numa_bw_Bps > 0))
        throw InputError(r.field("numa_bw") + " is required with two NUMA domains: the CPUs' link to each other");
    }
  }
  r.finish();
  c.node_links = n;
}

Json node_links_to_json(const NodeShape& n) {
  if (n.kind == NodeLinks::Mesh) {
    Json pairs = Json::array();
    for (const auto& p : n.pairs) pairs.push_back(Json::array({p[0], p[1], p[2]}));
    return Json{{"kind", "mesh"}, {"link_bw", n.link_bw_Bps}, {"pairs", pairs}};
  }
  if (n.kind == NodeLinks::Pcie) {
    Json j{{"kind", "pcie"},
           {"gpus_per_switch", n.gpus_per_switch},
           {"switch_bw", n.switch_bw_Bps},
           {"numa_domains", n.numa_domains}};
    if (n.numa_domains == 2) j["numa_bw"] = n.numa_bw_Bps;
    return j;
  }
  return Json{{"kind", "nvswitch"}};
}

void read_node(ObjectReader& r, ClusterSpec& c) {
  c.nodes = r.get_int_in("nodes", c.nodes, 1);
  c.gpus_per_node = r.get_int_in("gpus_per_node", c.gpus_per_node, 1);
  c.nvlink_bw_Bps = r.get_positive("nvlink_bw", c.nvlink_bw_Bps, parse_bandwidth);
  c.nvlink_latency_s = r.get_non_negative("nvlink_latency", c.nvlink_latency_s, parse_time);
  c.pcie_bw_Bps = r.get_positive("pcie_bw", c.pcie_bw_Bps, parse_bandwidth);
  c.pcie_latency_s = r.get_non_negative("pcie_latency", c.pcie_latency_s, parse_time);
  c.host_flops = r.get_positive("host_flops", c.host_flops, parse_flops);
  c.host_memory_bytes = r.get_positive("host_memory", c.host_memory_bytes, parse_bytes);
  c.host_memory_bw_Bps = r.get_positive("host_memory_bw", c.host_memory_bw_Bps, parse_bandwidth);
  c.nvme_read_Bps = r.get_positive("nvme_read_bw", c.nvme_read_Bps, parse_bandwidth);
  c.nvme_write_Bps = r.get_positive("nvme_write_bw", c.nvme_write_Bps, parse_bandwidth);
}

void read_network(ObjectReader& r, ClusterSpec& c) {
  c.nics_per_node = r.get_int_in("nics_per_node", c.nics_per_node, 0);
  c.nic_bw_Bps = r.get_positive("nic_bw", c.nic_bw_Bps, parse_bandwidth);
  c.nic_latency_s = r.get_non_negative("nic_latency", c.nic_latency_s, parse_time);
  c.fabric = get_enum(r, "fabric", kFabricTopologyNames, c.fabric);
  c.switch_radix = r.get_int_in("switch_radix", c.switch_radix, 2);
  if (r.has("oversubscription")) {
    c.oversubscription = r.get_number("oversubscription", 1);
    r.check(c.oversubscription >= 1, "oversubscription", "must be >= 1 (1 = full bisection)");
    r.check(c.oversubscription <= kMaxOversubscription, "oversubscription",
            "is more than 64: fabrics are built at 1:1 to 8:1 (down:up bandwidth of a leaf)");
  }
  c.switch_latency_s = r.get_non_negative("switch_latency", c.switch_latency_s, parse_time);
}

// A SimGrid setting placesim passes on from cluster.simgrid_config: the words it may be, or the range of a number.
struct SimgridSetting {
  const char* key;
  std::vector<std::string> words;  ///< the values allowed; empty for a number
  double low = 0, high = 0;        ///< a number's bounds, both allowed
  const char* note = "";           ///< why SimGrid's other values are left out
};

// SimGrid 3.32's settings that change how placesim's executions, transfers and disk reads take time (`--cfg=help` of
// libsimgrid 3.32). Each value and bound was run on examples/small-3d-1f1b.json and gpt3-175b-3d.json; the values
// left out abort SimGrid, crash it or never end on placesim's platform. Keys apply in key order, before the platform.
const std::vector<SimgridSetting>& simgrid_settings() {
  static const std::vector<SimgridSetting> settings = {
      // Network model: CM02 (placesim's), LV08 (SimGrid's: latency x 13.01, bandwidth x 0.97), SMPI and IB (MPI fits).
      {"network/model", {"CM02", "LV08", "SMPI", "IB"}, 0, 0, "Constant and ns-3 cannot build placesim's links"},
      // Host model: compound (CPU and network models apart) or ptask_L07 (parallel tasks, its own network model).
      {"host/model", {"compound", "ptask_L07"}, 0, 0, "default replaces network/model by LV08"},
      // CPU model: SimGrid 3.32 has one, Cas01 (time = FLOP / speed).
      {"cpu/model", {"Cas01"}},
      // How the CPU model updates running executions.
      {"cpu/optim", {"Lazy", "Full"}, 0, 0, "TI has no multi-core hosts"},
      // How the network model updates running transfers.
      {"network/optim", {"Lazy", "Full"}},
      // Precision of the max-min sharing solver (bytes/s, FLOP/s): -1 crashes SimGrid, 1 and above abort it.
      {"maxmin/precision", {}, 1e-15, 1e-2},
      // Precision of simulated times (s): 0 and below never end.
      {"surf/precision", {}, 1e-15, 1e-2},
      // Largest TCP window (bytes), capping each flow at gamma / (2 x route latency); 0 = no cap (placesim's).
      {"network/TCP-gamma", {}, 0, 1e12},
      // Uploads and downloads share a link's bandwidth (placesim's: 0).
      {"network/crosstraffic", {"0", "1", "no", "yes", "off", "on", "false", "true"}},
      // Multiplies every route's latency (LV08's: 13.01).
      {"network/latency-factor", {}, 1e-3, 1e3},
      // Multiplies every link's bandwidth (LV08's: 0.97); above 1 a link would carry more than its bandwidth.
      {"network/bandwidth-factor", {}, 1e-3, 1},
      // LV08's bytes per round trip weighing a flow's share of a link (SimGrid's: 20537).
      {"network/weight-S", {}, 0, 1e9},
  };
  return settings;
}

// The whole text as a finite number, as SimGrid reads it ("1e-9", "0.5"); nullopt otherwise.
std::optional<double> simgrid_number(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || at != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

// What is wrong with `value` for `s` ("" when nothing), naming the field, the value and what is allowed.
std::string setting_problem(const SimgridSetting& s, const std::string& value) {
  const std::string field = std::string("cluster.simgrid_config.") + s.key + "=" + value;
  if (s.words.empty()) {
    const std::optional<double> v = simgrid_number(value);
    if (v && *v >= s.low && *v <= s.high) return "";
    return field + " must be a number from " + format_significant(s.low) + " to " + format_significant(s.high);
  }
  if (std::find(s.words.begin(), s.words.end(), value) != s.words.end()) return "";
  std::string problem = field + " is not one of:";
  for (const auto& w : s.words) problem += " " + w;
  if (std::string guess = nearest(value, s.words); !guess.empty()) problem += " (did you mean '" + guess + "'?)";
  if (*s.note) problem += std::string(" (") + s.note + ")";
  return problem;
}

// Every problem of a simgrid_config object in one InputError: `problems` (values, in key order), then the keys
// placesim does not pass, each with the nearest one it does, and the list of those.
void refuse_simgrid_config(std::vector<std::string> problems, const std::vector<std::string>& unknown) {
  if (!unknown.empty()) {
    std::vector<std::string> keys;
    for (const auto& s : simgrid_settings()) keys.push_back(s.key);
    std::string text = std::string("cluster.simgrid_config: unknown key") + (unknown.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < unknown.size(); ++i) {
      text += (i ? ", \"" : "\"") + unknown[i] + "\"";
      if (std::string guess = nearest(unknown[i], keys); !guess.empty()) text += " (did you mean '" + guess + "'?)";
    }
    text += "; placesim passes these keys:";
    for (std::size_t i = 0; i < keys.size(); ++i) text += (i ? ", " : " ") + keys[i];
    problems.push_back(text);
  }
  if (problems.empty()) return;
  std::string message;
  for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  throw InputError(message);
}

// The problem of one key and value, or the key added to `unknown`.
void check_setting(const std::string& key, const std::string& value, std::vector<std::string>& problems,
                   std::vector<std::string>& unknown) {
  const auto& settings = simgrid_settings();
  const auto s = std::find_if(settings.begin(), settings.end(), [&](const SimgridSetting& x) { return key == x.key; });
  if (s == settings.end()) return unknown.push_back(key);
  if (std::string problem = setting_problem(*s, value); !problem.empty()) problems.push_back(problem);
}

void read_simgrid_config(ObjectReader& r, ClusterSpec& c) {
  const Json* config = r.child("simgrid_config");
  if (!config) return;
  if (!config->is_object())
    throw InputError(r.field("simgrid_config") + "=" + show(*config) + " must be an object of \"key\": \"value\"");
  std::vector<std::string> problems, unknown;
  for (auto it = config->begin(); it != config->end(); ++it) {
    if (!it.value().is_string()) {
      problems.push_back(r.field("simgrid_config") + "." + it.key() + "=" + show(it.value()) + " must be a string");
      continue;
    }
    c.simgrid_config[it.key()] = it.value().get<std::string>();
    check_setting(it.key(), c.simgrid_config[it.key()], problems, unknown);
  }
  refuse_simgrid_config(std::move(problems), unknown);
}

// The fabrics the accelerator brings: its reference system's, or those its profile file fitted. An accelerator
// described without them runs its transfers at the raw link figures unless the cluster gives "comm".
void set_default_comm(ClusterSpec& c) {
  const AcceleratorSpec& a = c.accelerator;
  if (a.intra_node_fabric) c.comm.intra_node = *a.intra_node_fabric;
  if (a.inter_node_fabric) c.comm.inter_node = *a.inter_node_fabric;
  if (a.intra_node_fabric && a.inter_node_fabric) return;
  if (a.intra_node_fabric || a.inter_node_fabric)
    throw InputError(std::string("cluster.accelerator has only the ") +
                     (a.intra_node_fabric ? "intra_node" : "inter_node") +
                     " fabric (from its profile or fabrics), and the custom accelerator " + a.name +
                     " has no reference system to take the other from: give cluster.comm or both fabrics");
  c.comm_model = CommModel::Links;
}

// The fabrics the accelerator brings (set_default_comm's), for a partial "comm" to keep: null halves it has none of.
std::pair<std::optional<FabricProfile>, std::optional<FabricProfile>> reference_fabrics(const ClusterSpec& c) {
  return {c.accelerator.intra_node_fabric, c.accelerator.inter_node_fabric};
}

// "comm" over the accelerator's reference fabrics: a fabric left out is the reference's and an object without
// "preset" overrides the reference field by field; a fabric with no reference is required whole, as before.
CommProfile parse_comm_over_reference(const Json& comm, const std::string& field, const ClusterSpec& c) {
  if (!comm.is_object()) return parse_comm_profile(comm, field);  // refused there, naming the field
  const auto [intra, inter] = reference_fabrics(c);
  Json merged = comm;
  for (auto [key, reference] : {std::pair{"intra_node", &intra}, {"inter_node", &inter}}) {
    if (!reference->has_value()) continue;
    Json base = fabric_profile_to_json(**reference);
    if (!merged.contains(key)) {
      merged[key] = base;
    } else if (merged[key].is_object() && !merged[key].contains("preset")) {
      base.update(merged[key]);
      merged[key] = base;
    }
  }
  return parse_comm_profile(merged, field);
}

// Whether "comm" gives `key`'s link bandwidth itself: a fabric preset, or an object with "preset" or "link_bw".
bool comm_gives_link_bw(const Json* comm, const char* key) {
  if (!comm || !comm->is_object() || !comm->contains(key)) return false;
  const Json& f = (*comm)[key];
  return f.is_string() || (f.is_object() && (f.contains("preset") || f.contains("link_bw")));
}

// A link's bandwidth is one number, read by the simulator from the cluster (nvlink_bw, nic_bw) and by the analytic
// model from the fabric (link_bw): the one given wins, both given must agree, neither given follows the fabric, which
// is the accelerator's reference system's unless "comm" says otherwise. A fabric without data (a custom accelerator's,
// link_bw 0) takes the cluster's.
void reconcile_link(double& cluster_bw, bool cluster_given, const char* cluster_key, double& fabric_bw,
                    bool fabric_given, const char* fabric_key) {
  if (cluster_given && fabric_given && cluster_bw != fabric_bw)
    throw InputError(std::string("cluster.") + cluster_key + "=" + format_significant(cluster_bw, 10) +
                     " and cluster.comm." + fabric_key + ".link_bw=" + format_significant(fabric_bw, 10) +
                     " (bytes/s) are the same link's bandwidth: give one of them, or the same value");
  if (cluster_given || fabric_bw <= 0)
    fabric_bw = cluster_bw;
  else
    cluster_bw = fabric_bw;
}

void require(bool ok, const std::string& field, double value, const char* rule) {
  if (!ok) throw InputError("cluster." + field + "=" + format_significant(value, 10) + " " + rule);
}

// "comm" (or the accelerator's default), then the link bandwidths the cluster and the fabrics both give.
void read_comm_and_links(ObjectReader& r, ClusterSpec& c) {
  const Json* comm = r.child("comm");
  if (comm)
    c.comm = r.guarded("comm", c.comm, [&] { return parse_comm_over_reference(*comm, r.field("comm"), c); });
  else if (r.clean())
    set_default_comm(c);
  if (!r.ok({"comm", "nvlink_bw", "nic_bw"})) return;
  r.guarded("nvlink_bw", false, [&] {
    reconcile_link(c.nvlink_bw_Bps, r.has("nvlink_bw"), "nvlink_bw", c.comm.intra_node.link_bw_Bps,
                   comm_gives_link_bw(comm, "intra_node"), "intra_node");
    return true;
  });
  r.guarded("nic_bw", false, [&] {
    reconcile_link(c.nic_bw_Bps, r.has("nic_bw"), "nic_bw", c.comm.inter_node.link_bw_Bps,
                   comm_gives_link_bw(comm, "inter_node"), "inter_node");
    return true;
  });
}

}  // namespace

void validate_cluster(const ClusterSpec& c) {
  require(c.nodes >= 1, "nodes", c.nodes, "must be at least 1");
  require(c.gpus_per_node >= 1, "gpus_per_node", c.gpus_per_node, "must be at least 1");
  require(c.gpus_per_node <= kMaxGpusPerNode, "gpus_per_node", c.gpus_per_node,
          "is more than the 1024 GPUs of one node (one NVLink domain: 8 in a DGX, 72 in a GB200 NVL72 rack)");
  if (static_cast<long long>(c.nodes) * c.gpus_per_node > INT_MAX)
    throw InputError("cluster.nodes=" + std::to_string(c.nodes) +
                     " x cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) + " devices do not fit in an int");
  require(c.accelerator.peak_bf16_flops > 0, "accelerator.peak_bf16_flops", c.accelerator.peak_bf16_flops,
          "must be positive");
  for (auto [field, v] : {std::pair{"nvlink_bw", c.nvlink_bw_Bps},
                          {"pcie_bw", c.pcie_bw_Bps},
                          {"host_flops", c.host_flops},
                          {"host_memory", c.host_memory_bytes},
                          {"nvme_read_bw", c.nvme_read_Bps},
                          {"nvme_write_bw", c.nvme_write_Bps},
                          {"nic_bw", c.nic_bw_Bps}})
    require(v > 0 && std::isfinite(v), field, v, "must be positive and finite");
  for (auto [field, v] : {std::pair{"nvlink_latency", c.nvlink_latency_s},
                          {"pcie_latency", c.pcie_latency_s},
                          {"nic_latency", c.nic_latency_s},
                          {"switch_latency", c.switch_latency_s}}) {
    require(v >= 0 && std::isfinite(v), field, v, "must be a finite time >= 0");
    require(v <= kMaxLatencySeconds, field, v, "s is more than 1 s (link latencies are microseconds); check the unit");
  }
  if (c.node_links.kind == NodeLinks::Mesh &&
      static_cast<long long>(c.nodes) * c.gpus_per_node * (c.gpus_per_node - 1) / 2 > INT_MAX)
    throw InputError("cluster.nodes=" + std::to_string(c.nodes) + " mesh nodes of " + std::to_string(c.gpus_per_node) +
                     " GPUs hold more GPU pairs than fit in an int");
  require(c.nics_per_node >= 0, "nics_per_node", c.nics_per_node, "must not be negative");
  if (c.nodes > 1 && c.nics_per_node < 1)
    throw InputError("cluster.nics_per_node=" + std::to_string(c.nics_per_node) +
                     " must be at least 1 when cluster.nodes=" + std::to_string(c.nodes) +
                     " > 1 (nodes reach each other only through NICs)");
  if (c.nics_per_node > 0 && c.gpus_per_node % c.nics_per_node != 0)
    throw InputError("cluster.nics_per_node=" + std::to_string(c.nics_per_node) +
                     " does not divide cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) +
                     " (GPUs share NICs in equal groups)");
  require(c.switch_radix >= 2, "switch_radix", c.switch_radix, "must be at least 2 (half the ports go down)");
  require(c.oversubscription >= 1 && std::isfinite(c.oversubscription), "oversubscription", c.oversubscription,
          "must be >= 1 (1 = full bisection)");
  require(c.oversubscription <= kMaxOversubscription, "oversubscription", c.oversubscription,
          "is more than 64: fabrics are built at 1:1 to 8:1 (down:up bandwidth of a leaf)");
}

void check_simgrid_config(const std::map<std::string, std::string>& config) {
  std::vector<std::string> problems, unknown;
  for (const auto& [key, value] : config) check_setting(key, value, problems, unknown);
  refuse_simgrid_config(std::move(problems), unknown);
}

ClusterSpec parse_cluster(const Json& value, ErrorList* errors) {
  if (value.is_string()) {
    ClusterSpec c = cluster_preset(value.get<std::string>(), "cluster");
    set_default_comm(c);
    validate_cluster(c);
    return c;
  }
  if (!value.is_object()) throw InputError("cluster=" + show(value) + " must be a cluster preset name or an object");
  ObjectReader r(value, "cluster", errors);
  ClusterSpec c;
  bool from_preset = r.has("preset");
  if (from_preset)
    c = r.guarded("preset", c, [&] { return cluster_preset(r.require_string("preset"), r.field("preset")); });
  c.name = r.get_string("name", c.name);
  if (const Json* accelerator = r.child("accelerator"))
    c.accelerator = r.guarded("accelerator", c.accelerator,
                              [&] { return parse_accelerator(*accelerator, r.field("accelerator")); });
  else if (!from_preset)
    r.refuse("accelerator", "cluster.accelerator is required when cluster.preset is not given");
  // The fields override the preset's and describe the accelerator's node: without either, no rule over them may run.
  if (!r.ok({"preset", "accelerator"})) r.abandon();
  read_node(r, c);
  r.guarded("node_links", false, [&] {
    read_node_links(r, c);
    return true;
  });
  read_network(r, c);
  r.guarded("simgrid_config", false, [&] {
    read_simgrid_config(r, c);
    return true;
  });
  c.comm_model = get_enum(r, "comm_model", kCommModelNames, c.comm_model);
  read_comm_and_links(r, c);
  r.finish();
  if (r.clean()) validate_cluster(c);
  return c;
}

ClusterSpec simulated_network(const ClusterSpec& c) {
  if (c.comm_model != CommModel::Nccl) return c;
  ClusterSpec n = c;
  const FabricProfile& intra = c.comm.intra_node;
  const FabricProfile& inter = c.comm.inter_node;
  n.nvlink_bw_Bps = c.nvlink_bw_Bps * intra.bus_efficiency;
  n.nvlink_latency_s = intra.step_latency_s / 2;  // a GPU-to-GPU route crosses two NVLink links
  n.nic_bw_Bps = c.nic_bw_Bps * inter.bus_efficiency;
  // A mesh's links run NCCL's (RCCL's) rings like NVSwitch ports: the same bus efficiency. PCIe keeps its raw
  // figures (host copies use it too).
  n.node_links.link_bw_Bps = c.node_links.link_bw_Bps * intra.bus_efficiency;
  n.nic_latency_s = std::max(0.0, (inter.step_latency_s - c.switch_latency_s) / 2);  // same-leaf route = one step
  return n;
}

std::string to_string(FabricTopology f) {
  return name_of(kFabricTopologyNames, f, "fat-tree");
}

std::string to_string(CommModel m) {
  return name_of(kCommModelNames, m, "nccl");
}

std::vector<std::pair<std::string, std::string>> cluster_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.description);
  return out;
}

Json cluster_to_json(const ClusterSpec& c) {
  const AcceleratorSpec& a = c.accelerator;
  // The rated peaks and the power limit: parsing them applies the limit's scale once.
  Json accelerator{{"name", a.name},
                   {"peak_bf16_flops", a.peak_bf16_flops / a.compute_scale},
                   {"peak_fp16_flops", a.peak_fp16_flops / a.compute_scale},
                   {"peak_fp32_flops", a.peak_fp32_flops / a.compute_scale},
                   {"hbm_bytes", a.hbm_bytes},
                   {"hbm_bw", a.hbm_bw_Bps},
                   {"gemm_efficiency", a.gemm_efficiency},
                   {"tdp_w", a.tdp_w}};
  if (a.power_limit_w > 0) accelerator["power_limit_w"] = a.power_limit_w;
  if (a.peak_fp8_flops > 0) accelerator["peak_fp8_flops"] = a.peak_fp8_flops / a.compute_scale;
  Json config = Json::object();
  for (const auto& [key, value] : c.simgrid_config) config[key] = value;
  // Same keys as the input, in SI units, so that parse_cluster(cluster_to_json(c)) gives c back.
  Json out{{"name", c.name},
           {"accelerator", accelerator},
           {"nodes", c.nodes},
           {"gpus_per_node", c.gpus_per_node},
           {"nvlink_bw", c.nvlink_bw_Bps},
           {"nvlink_latency", c.nvlink_latency_s},
           {"pcie_bw", c.pcie_bw_Bps},
           {"pcie_latency", c.pcie_latency_s},
           {"host_flops", c.host_flops},
           {"host_memory", c.host_memory_bytes},
           {"nvme_read_bw", c.nvme_read_Bps},
           {"nvme_write_bw", c.nvme_write_Bps},
           {"nics_per_node", c.nics_per_node},
           {"nic_bw", c.nic_bw_Bps},
           {"nic_latency", c.nic_latency_s},
           {"fabric", to_string(c.fabric)},
           {"switch_radix", c.switch_radix},
           {"oversubscription", c.oversubscription},
           {"switch_latency", c.switch_latency_s},
           {"host_memory_bw", c.host_memory_bw_Bps},
           {"simgrid_config", config},
           {"comm_model", to_string(c.comm_model)},
           {"comm",
            {{"intra_node", fabric_profile_to_json(c.comm.intra_node)},
             {"inter_node", fabric_profile_to_json(c.comm.inter_node)}}}};
  if (c.node_links.kind != NodeLinks::NvSwitch) out["node_links"] = node_links_to_json(c.node_links);
  return out;
}

int NodeShape::links(int a, int b) const {
  const int lo = std::min(a, b), hi = std::max(a, b);
  for (const auto& p : pairs)
    if (p[0] == lo && p[1] == hi) return p[2];
  return 0;
}

}  // namespace placesim
