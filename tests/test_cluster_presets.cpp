// The built-in cluster presets (topology/cluster/presets/*.json) against the numbers of the data sheets their files
// cite, written here from those sheets: NVIDIA DGX A100 / H100 / H200 / B200, GB200 NVL72, A100 and H100 (PCIe),
// AMD's MI300X platform, NVIDIA's A800 statement to Reuters, DeepSeek-V3's H800 cluster, TOP500 (Selene).
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "topology/cluster/Cluster.hpp"
#include "workloads/json/Embedded.hpp"

using namespace placesim;
using Catch::Contains;

namespace {

// What a data sheet states of one preset's node. Bandwidths per direction in bytes/s: NVLink from the bidirectional
// per-GPU figure / 2, NICs from Gb/s / 8.
struct DataSheet {
  const char* name;
  const char* accelerator;
  int nodes;
  int gpus_per_node;
  double nvlink_bw_Bps;
  int nics_per_node;
  double nic_bw_Bps;
  double pcie_bw_Bps;
  double host_flops;  ///< per GPU: the node's CPU FLOP/s over its GPUs
  NodeLinks node_links;
};

// Host CPUs: sockets x cores x clock x FP32 FLOP per cycle per core, shared by the node's GPUs.
constexpr double kEpyc7742PerGpu = 2 * 64 * 2.25e9 * 32 / 8;  // DGX A100: dual EPYC 7742, two 256-bit FMA pipes
constexpr double kXeon8480cPerGpu = 2 * 56 * 2.0e9 * 64 / 8;  // DGX H100: dual Xeon 8480C, two AVX-512 FMA units
constexpr double kXeon8570PerGpu = 2 * 56 * 2.1e9 * 64 / 8;   // DGX B200: dual Xeon 8570
constexpr double kGracePerGpu = 72 * 3.1e9 * 32 / 2;          // one Grace (72 cores, assumed 3.1 GHz) per 2 GPUs

const DataSheet kSheets[] = {
    {"dgx-a100", "a100-80gb", 1, 8, 600e9 / 2, 8, 200e9 / 8, 25e9, kEpyc7742PerGpu, NodeLinks::NvSwitch},
    {"dgx-h100", "h100-sxm", 1, 8, 900e9 / 2, 8, 400e9 / 8, 50e9, kXeon8480cPerGpu, NodeLinks::NvSwitch},
    {"dgx-h200", "h200", 1, 8, 900e9 / 2, 8, 400e9 / 8, 50e9, kXeon8480cPerGpu, NodeLinks::NvSwitch},
    {"dgx-b200", "b200", 1, 8, 1.8e12 / 2, 8, 400e9 / 8, 50e9, kXeon8570PerGpu, NodeLinks::NvSwitch},
    // NVLink-C2C: 900 GB/s bidirectional per Grace, shared by its two GPUs.
    {"gb200-nvl72", "gb200", 1, 72, 1.8e12 / 2, 72, 400e9 / 8, 900e9 / 2 / 2, kGracePerGpu, NodeLinks::NvSwitch},
    {"gb200-nvl36", "gb200", 1, 36, 1.8e12 / 2, 36, 400e9 / 8, 900e9 / 2 / 2, kGracePerGpu, NodeLinks::NvSwitch},
    // Seven Infinity Fabric links of 64 GB/s per GPU; the host is Azure ND MI300X v5's dual Xeon 8480C.
    {"amd-mi300x", "mi300x", 1, 8, 7 * 64e9, 8, 400e9 / 8, 50e9, kXeon8480cPerGpu, NodeLinks::Mesh},
    {"pcie-a100", "a100-80gb-pcie", 1, 8, 600e9 / 2, 8, 200e9 / 8, 25e9, kEpyc7742PerGpu, NodeLinks::Pcie},
    {"pcie-h100-nvlink-pairs", "h100-pcie", 1, 8, 900e9 / 2, 8, 400e9 / 8, 50e9, kXeon8480cPerGpu, NodeLinks::Mesh},
    // The export cuts: NVLink at 400 GB/s bidirectional.
    {"hgx-a800", "a800", 1, 8, 400e9 / 2, 8, 200e9 / 8, 25e9, kEpyc7742PerGpu, NodeLinks::NvSwitch},
    {"hgx-h800", "h800", 1, 8, 400e9 / 2, 8, 400e9 / 8, 50e9, kXeon8480cPerGpu, NodeLinks::NvSwitch},
    // TOP500 November 2020: 560 DGX A100 nodes.
    {"selene", "a100-80gb", 560, 8, 600e9 / 2, 8, 200e9 / 8, 25e9, kEpyc7742PerGpu, NodeLinks::NvSwitch},
};

Approx same(double v) {
  return Approx(v).epsilon(1e-12);
}

}  // namespace

TEST_CASE("every cluster preset has the data sheet's GPUs, NVLink, NICs, PCIe and host CPU") {
  std::set<std::string> listed;
  for (const auto& [name, description] : cluster_preset_list()) listed.insert(name);
  std::set<std::string> sheets;
  for (const DataSheet& s : kSheets) sheets.insert(s.name);
  CHECK(listed == sheets);
  for (const DataSheet& s : kSheets) {
    INFO(s.name);
    const ClusterSpec c = parse_cluster(Json(s.name));
    CHECK(c.name == s.name);
    CHECK(c.accelerator.name == s.accelerator);
    CHECK(c.nodes == s.nodes);
    CHECK(c.gpus_per_node == s.gpus_per_node);
    CHECK(c.nvlink_bw_Bps == same(s.nvlink_bw_Bps));
    CHECK(c.nics_per_node == s.nics_per_node);
    CHECK(c.nic_bw_Bps == same(s.nic_bw_Bps));
    CHECK(c.pcie_bw_Bps == same(s.pcie_bw_Bps));
    CHECK(c.host_flops == same(s.host_flops));
    CHECK(c.node_links.kind == s.node_links);
    // The NCCL profile's link is the cluster's link (cluster.nvlink_bw and comm.intra_node.link_bw agree).
    CHECK(c.comm.intra_node.link_bw_Bps == same(s.nvlink_bw_Bps));
    CHECK(c.comm.inter_node.link_bw_Bps == same(s.nic_bw_Bps));
  }
}

TEST_CASE("the DGX A100 preset has its data sheet's host, NVMe and HDR switch figures") {
  const ClusterSpec c = parse_cluster(Json("dgx-a100"));
  CHECK(c.host_memory_bytes == same(2e12));   // 2 TB
  CHECK(c.nvme_read_Bps == same(8 * 6.5e9));  // 8 U.2 drives at an assumed 6.5 GB/s read, 3.5 GB/s write
  CHECK(c.nvme_write_Bps == same(8 * 3.5e9));
  CHECK(c.nic_latency_s == same(600e-9));  // ConnectX-6: sub-600 ns
  CHECK(c.switch_radix == 40);             // Quantum QM8700: 40 ports, 130 ns port to port
  CHECK(c.switch_latency_s == same(130e-9));
  CHECK(c.fabric == FabricTopology::RailOptimized);
  // Quantum-2 QM9700 (DGX H100): 64 ports.
  CHECK(parse_cluster(Json("dgx-h100")).switch_radix == 64);
}

TEST_CASE("the GB200 presets hold one Grace's LPDDR5X per two GPUs") {
  for (const auto& [name, graces] : {std::pair{"gb200-nvl72", 36}, std::pair{"gb200-nvl36", 18}}) {
    INFO(name);
    const ClusterSpec c = parse_cluster(Json(name));
    CHECK(c.host_memory_bytes == same(graces * 480e9));   // up to 480 GB per Grace
    CHECK(c.host_memory_bw_Bps == same(graces * 512e9));  // up to 512 GB/s per Grace
  }
}

TEST_CASE("the mesh and PCIe presets join the GPU pairs their data sheets describe") {
  const ClusterSpec mi300x = parse_cluster(Json("amd-mi300x"));
  CHECK(mi300x.node_links.link_bw_Bps == same(64e9));
  CHECK(mi300x.node_links.pairs.size() == 8 * 7 / 2);  // every pair of 8 OAMs, one link each
  CHECK(mi300x.node_links.links(3, 6) == 1);
  const ClusterSpec bridged = parse_cluster(Json("pcie-h100-nvlink-pairs"));
  CHECK(bridged.node_links.link_bw_Bps * bridged.node_links.links(0, 1) == same(600e9 / 2));  // three bridges
  CHECK(bridged.node_links.links(6, 7) == 3);
  CHECK(bridged.node_links.links(1, 2) == 0);  // over PCIe through the host
  const ClusterSpec pcie = parse_cluster(Json("pcie-a100"));
  CHECK(pcie.node_links.gpus_per_switch == 2);
  CHECK(pcie.node_links.numa_domains == 2);
  CHECK(pcie.node_links.switch_bw_Bps == same(25e9));
}

TEST_CASE("a cluster preset is its file: named after it, cited, and read as a user's cluster section") {
  const std::vector<std::string> paths = embedded_folder("topology/cluster/presets");
  REQUIRE(paths.size() == cluster_preset_list().size());
  for (const std::string& path : paths) {
    INFO(path);
    Json file = embedded_json(path);
    CHECK(file["name"].get<std::string>() == std::filesystem::path(path).stem().string());
    REQUIRE(file["sources"].is_array());
    CHECK(!file["sources"].empty());
    // The same fields as an experiment's "cluster" section give the same cluster.
    file.erase("description");
    file.erase("sources");
    const std::string name = file["name"].get<std::string>();
    CHECK(cluster_to_json(parse_cluster(file)) == cluster_to_json(parse_cluster(Json(name))));
  }
}

TEST_CASE("an unknown cluster preset lists the preset files' names") {
  for (const auto& [name, description] : cluster_preset_list())
    CHECK_THROWS_WITH(parse_cluster(Json("tpu-v5p-pod")), Contains(name));
  CHECK_THROWS_WITH(parse_cluster(Json{{"preset", "dgx-z900"}, {"nodes", 2}}),
                    Contains("cluster.preset=dgx-z900 is not a known cluster"));
}
