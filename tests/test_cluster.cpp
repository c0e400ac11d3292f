// The "cluster" section: presets (numbers from NVIDIA's DGX A100 / DGX H100 data sheets), overrides, units and one
// throwing case per validation rule.
#include <catch2/catch.hpp>

#include "strategies/analytic/Analytic.hpp"
#include "tests/Helpers.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/report/SimReport.hpp"

using namespace placesim;
using Catch::Contains;

namespace {

ClusterSpec cluster(const std::string& text) {
  return parse_cluster(Json::parse(text));
}

}  // namespace

TEST_CASE("dgx-a100 with 128 nodes has 1024 devices and the data-sheet links") {
  ClusterSpec c = cluster(R"({"preset": "dgx-a100", "nodes": 128})");
  CHECK(c.name == "dgx-a100");
  CHECK(c.devices() == 1024);
  CHECK(c.gpus_per_node == 8);
  CHECK(c.accelerator.name == "a100-80gb");
  CHECK(c.nvlink_bw_Bps == 300e9);  // 600 GB/s bidirectional per GPU
  CHECK(c.nics_per_node == 8);
  CHECK(c.nic_bw_Bps == 25e9);  // HDR 200 Gb/s
  CHECK(c.pcie_bw_Bps == 25e9);
  CHECK(c.host_memory_bytes == 2e12);
  CHECK(c.fabric == FabricTopology::RailOptimized);
  CHECK(c.oversubscription == 1.0);
}

TEST_CASE("a preset named by a string alone has one node") {
  ClusterSpec c = parse_cluster(Json("dgx-h100"));
  CHECK(c.nodes == 1);
  CHECK(c.devices() == 8);
  CHECK(c.accelerator.name == "h100-sxm");
  CHECK(c.nvlink_bw_Bps == 450e9);  // NVLink4: 900 GB/s bidirectional
  CHECK(c.nic_bw_Bps == 50e9);      // NDR 400 Gb/s
  CHECK(c.switch_radix == 64);
}

TEST_CASE("selene is 560 DGX A100 nodes in 20-node rail-optimized units") {
  ClusterSpec c = parse_cluster(Json("selene"));
  CHECK(c.devices() == 4480);
  CHECK(c.accelerator.name == "a100-80gb");
  CHECK(c.fabric == FabricTopology::RailOptimized);
  CHECK(c.switch_radix / 2 == 20);
  CHECK(cluster(R"({"preset": "selene", "nodes": 140})").devices() == 1120);
}

TEST_CASE("overrides replace preset fields and parse units") {
  ClusterSpec c = cluster(R"({"preset": "dgx-a100", "name": "what-if", "nodes": 4, "accelerator": "h100-sxm",
                              "nic_bw": "400Gbps", "nic_latency": "2us", "nvlink_bw": 1e11, "pcie_latency": 3e-6,
                              "host_memory": "512GiB", "host_flops": "2TFLOPS", "nvme_write_bw": "5 GB/s",
                              "fabric": "fat-tree", "oversubscription": 2, "switch_radix": 32,
                              "switch_latency": "100ns", "nics_per_node": 4})");
  CHECK(c.name == "what-if");
  CHECK(c.nodes == 4);
  CHECK(c.accelerator.name == "h100-sxm");
  CHECK(c.nic_bw_Bps == 5e10);
  CHECK(c.nic_latency_s == Approx(2e-6).epsilon(1e-12));
  CHECK(c.nvlink_bw_Bps == 1e11);
  CHECK(c.pcie_latency_s == 3e-6);
  CHECK(c.host_memory_bytes == 512.0 * 1073741824.0);
  CHECK(c.host_flops == 2e12);
  CHECK(c.nvme_write_Bps == 5e9);
  CHECK(c.fabric == FabricTopology::FatTree);
  CHECK(c.oversubscription == 2);
  CHECK(c.switch_radix == 32);
  CHECK(c.switch_latency_s == Approx(100e-9).epsilon(1e-12));
  CHECK(c.nics_per_node == 4);
  CHECK(c.pcie_bw_Bps == 25e9);  // untouched fields keep the preset's value
}

TEST_CASE("a cluster without preset takes its accelerator as an object") {
  ClusterSpec c = cluster(R"({"accelerator": {"preset": "a100-40gb", "hbm_bw": "1TB/s"}, "nodes": 2,
                              "gpus_per_node": 4, "nics_per_node": 1,
                              "simgrid_config": {"maxmin/precision": "1e-9"}})");
  CHECK(c.name == "custom");
  CHECK(c.accelerator.name == "a100-40gb");
  CHECK(c.accelerator.hbm_bw_Bps == 1e12);
  CHECK(c.devices() == 8);
  CHECK(c.simgrid_config.at("maxmin/precision") == "1e-9");
}

TEST_CASE("one NIC per node is enough on a single node and nics can be absent there") {
  CHECK(cluster(R"({"preset": "dgx-a100", "nics_per_node": 0})").nics_per_node == 0);
  CHECK(cluster(R"({"preset": "dgx-a100", "nics_per_node": 1, "nodes": 2})").nics_per_node == 1);
}

TEST_CASE("cluster_to_json echoes SI numbers that parse back to the same cluster") {
  ClusterSpec c = cluster(R"({"preset": "dgx-h100", "nodes": 3, "nic_bw": "100Gbps", "oversubscription": 1.5,
                              "simgrid_config": {"maxmin/precision": "1e-9"}})");
  Json echoed = cluster_to_json(c);
  CHECK(echoed["nic_bw"].get<double>() == 12.5e9);
  CHECK(echoed["nodes"].get<int>() == 3);
  CHECK(echoed["accelerator"]["name"].get<std::string>() == "h100-sxm");
  CHECK(cluster_to_json(parse_cluster(echoed)) == echoed);
}

TEST_CASE("the preset list names every cluster preset") {
  auto list = cluster_preset_list();
  REQUIRE(list.size() == 12);
  const char* names[] = {"amd-mi300x",
                         "dgx-a100",
                         "dgx-b200",
                         "dgx-h100",
                         "dgx-h200",
                         "gb200-nvl36",
                         "gb200-nvl72",
                         "hgx-a800",
                         "hgx-h800",
                         "pcie-a100",
                         "pcie-h100-nvlink-pairs",
                         "selene"};
  for (std::size_t i = 0; i < list.size(); ++i) CHECK(list[i].first == names[i]);
  for (const auto& [name, description] : list) CHECK_NOTHROW(parse_cluster(Json(name)));
}

TEST_CASE("zero bandwidth is refused naming the field and the value") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nic_bw": "0Gbps"})"),
                    Contains("cluster.nic_bw=\"0Gbps\" must be positive"));
}

TEST_CASE("negative bandwidth is refused") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nvlink_bw": -5})"),
                    Contains("cluster.nvlink_bw=-5 must be positive"));
}

TEST_CASE("negative latency is refused") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "switch_latency": "-1us"})"),
                    Contains("cluster.switch_latency=\"-1us\" must not be negative"));
}

TEST_CASE("a bandwidth with an unknown unit is refused") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "pcie_bw": "25 GiB/h"})"),
                    Contains("cluster.pcie_bw=\"25 GiB/h\": unknown bandwidth unit"));
}

TEST_CASE("an unknown accelerator names cluster.accelerator and suggests a preset") {
  CHECK_THROWS_WITH(
      cluster(R"({"preset": "dgx-a100", "accelerator": "a100-80g"})"),
      Contains("cluster.accelerator=a100-80g is not a known accelerator") && Contains("did you mean 'a100-80gb'"));
}

TEST_CASE("an unknown cluster preset suggests the nearest") {
  CHECK_THROWS_WITH(parse_cluster(Json("dgx-a10")),
                    Contains("cluster=dgx-a10 is not a known cluster") && Contains("did you mean 'dgx-a100'"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "selen"})"), Contains("cluster.preset=selen"));
}

TEST_CASE("an unknown key is refused with the nearest known key") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "swich_radix": 32})"),
                    Contains("unknown key cluster.swich_radix (did you mean 'cluster.switch_radix'?)"));
}

TEST_CASE("nics_per_node must divide gpus_per_node") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nics_per_node": 3})"),
                    Contains("cluster.nics_per_node=3 does not divide cluster.gpus_per_node=8"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nics_per_node": 16})"),
                    Contains("cluster.nics_per_node=16 does not divide cluster.gpus_per_node=8"));
}

TEST_CASE("several nodes need at least one NIC each") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nodes": 2, "nics_per_node": 0})"),
                    Contains("cluster.nics_per_node=0 must be at least 1 when cluster.nodes=2 > 1"));
}

TEST_CASE("node and GPU counts must be positive integers") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nodes": 0})"),
                    Contains("cluster.nodes=0 must be an integer >= 1"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "gpus_per_node": 2.5})"),
                    Contains("cluster.gpus_per_node=2.5 must be an integer"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "nics_per_node": -1})"),
                    Contains("cluster.nics_per_node=-1 must be an integer >= 0"));
}

TEST_CASE("oversubscription below 1 is refused") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "oversubscription": 0.5})"),
                    Contains("cluster.oversubscription=0.5 must be >= 1"));
}

TEST_CASE("an unknown fabric suggests the nearest") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "fabric": "fat tree"})"),
                    Contains("cluster.fabric=fat tree is not one of") && Contains("did you mean 'fat-tree'"));
}

TEST_CASE("a switch needs a port down and a port up") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "switch_radix": 1})"),
                    Contains("cluster.switch_radix=1 must be an integer >= 2"));
}

TEST_CASE("a cluster without preset needs an accelerator") {
  CHECK_THROWS_WITH(cluster(R"({"nodes": 2})"), Contains("cluster.accelerator is required"));
}

TEST_CASE("the cluster section must be a name or an object") {
  CHECK_THROWS_WITH(parse_cluster(Json(8)), Contains("cluster=8 must be a cluster preset name or an object"));
}

TEST_CASE("simgrid_config values must be strings") {
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-a100", "simgrid_config": {"maxmin/precision": 1e-9}})"),
                    Contains("cluster.simgrid_config.maxmin/precision=1e-09 must be a string"));
}

TEST_CASE("validate_cluster refuses a cluster built in code with a zero bandwidth") {
  ClusterSpec c = parse_cluster(Json("dgx-a100"));
  c.nic_bw_Bps = 0;
  CHECK_THROWS_WITH(validate_cluster(c), Contains("cluster.nic_bw=0 must be positive"));
  c = parse_cluster(Json("dgx-a100"));
  c.nvlink_latency_s = -1e-6;
  CHECK_THROWS_WITH(validate_cluster(c), Contains("cluster.nvlink_latency=-1e-06 must be a finite time >= 0"));
  c = parse_cluster(Json("dgx-a100"));
  c.accelerator = AcceleratorSpec{};
  CHECK_THROWS_WITH(validate_cluster(c), Contains("cluster.accelerator.peak_bf16_flops=0 must be positive"));
}

// A fabric's link_bw was ignored by the simulator (it runs on nvlink_bw / nic_bw) and a "comm"
// giving one fabric was refused with "intra_node is required".
TEST_CASE("comm.inter_node.link_bw takes effect: it is the NIC's bandwidth") {
  ClusterSpec c =
      cluster(R"({"preset": "dgx-h100", "comm": {"inter_node": {"preset": "ib-ndr", "link_bw": "100Gbps"}}})");
  CHECK(c.nic_bw_Bps == 12.5e9);
  CHECK(c.comm.inter_node.link_bw_Bps == 12.5e9);
  CHECK(simulated_network(c).nic_bw_Bps == 12.5e9 * (24.0 / 25.0));  // ib-ndr's bus efficiency
  CHECK(c.comm.intra_node.name == "nvlink4");                        // the other half: the h100's reference
}

TEST_CASE("a comm giving one fabric keeps the other from the accelerator's reference system") {
  ClusterSpec c = cluster(R"({"preset": "dgx-h100", "comm": {"inter_node": "roce-200g"}})");
  CHECK(c.comm.intra_node.name == "nvlink4");
  CHECK(c.comm.inter_node.name == "roce-200g");
  CHECK(c.nic_bw_Bps == 25e9);  // a RoCE 200 Gb/s NIC
  CHECK(c.nvlink_bw_Bps == 450e9);
  // A fabric object without a preset overrides the reference fabric field by field.
  ClusterSpec d = cluster(R"({"preset": "dgx-a100", "comm": {"intra_node": {"step_latency": "5us"}}})");
  CHECK(d.comm.intra_node.name == "nvlink3");
  CHECK(d.comm.intra_node.step_latency_s == Approx(5e-6).epsilon(1e-12));
  CHECK(d.comm.intra_node.link_bw_Bps == 300e9);
  CHECK(d.comm.inter_node.name == "ib-hdr");
}

TEST_CASE("a custom accelerator without reference fabrics still needs both halves of comm") {
  CHECK_THROWS_WITH(
      cluster(R"({"accelerator": {"name": "x", "peak_bf16_flops": "100TFLOPS", "hbm_bytes": "80GB", "hbm_bw": "2TB/s"},
                  "comm": {"inter_node": "roce-200g"}})"),
      Contains("cluster.comm.intra_node is required but missing"));
}

TEST_CASE("nvlink_bw and the intra-node fabric's link_bw are one number: an override of either reaches both") {
  ClusterSpec c = cluster(R"({"preset": "dgx-h100", "nvlink_bw": "300GB/s"})");
  CHECK(c.nvlink_bw_Bps == 300e9);
  CHECK(c.comm.intra_node.link_bw_Bps == 300e9);  // the analytic TP cost reads this one (was 450e9)
  ClusterSpec d = cluster(R"({"preset": "dgx-h100", "comm": {"intra_node": {"link_bw": "300GB/s"}}})");
  CHECK(d.nvlink_bw_Bps == 300e9);  // the simulator reads this one (was 450e9)
  ClusterSpec same =
      cluster(R"({"preset": "dgx-h100", "nic_bw": "100Gbps", "comm": {"inter_node": {"link_bw": 12.5e9}}})");
  CHECK(same.nic_bw_Bps == 12.5e9);
}

TEST_CASE("nic_bw and comm.inter_node.link_bw that disagree are refused naming both") {
  CHECK_THROWS_WITH(
      cluster(R"({"preset": "dgx-h100", "nic_bw": "400Gbps", "comm": {"inter_node": {"link_bw": "100Gbps"}}})"),
      Contains("cluster.nic_bw=5e+10 and cluster.comm.inter_node.link_bw=1.25e+10 (bytes/s) are "
               "the same link's bandwidth"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-h100", "nic_bw": "400Gbps", "comm": {"inter_node": "roce-200g"}})"),
                    Contains("cluster.nic_bw=5e+10 and cluster.comm.inter_node.link_bw=2.5e+10"));
}

// Switching accelerator kept the preset's NVLink (450 GB/s) under an NVLink5 comm profile.
TEST_CASE("a node's links follow its accelerator unless given") {
  ClusterSpec c = cluster(R"({"preset": "dgx-h100", "accelerator": "b200"})");
  CHECK(c.comm.intra_node.name == "nvlink5");
  CHECK(c.nvlink_bw_Bps == 900e9);
  CHECK(c.nic_bw_Bps == 50e9);
  ClusterSpec a = cluster(R"({"preset": "dgx-a100", "accelerator": "h100-sxm"})");
  CHECK(a.nvlink_bw_Bps == 450e9);  // nvlink4
  CHECK(a.nic_bw_Bps == 50e9);      // ib-ndr, the DGX H100's
  ClusterSpec kept = cluster(R"({"preset": "dgx-h100", "accelerator": "b200", "nvlink_bw": "450GB/s"})");
  CHECK(kept.nvlink_bw_Bps == 450e9);
  CHECK(kept.comm.intra_node.link_bw_Bps == 450e9);
}

TEST_CASE("dgx-b200 is 8 B200 on NVLink5 with 400 Gb/s rails (DGX B200 data sheet)") {
  ClusterSpec c = cluster(R"({"preset": "dgx-b200", "nodes": 2})");
  CHECK(c.accelerator.name == "b200");
  CHECK(c.devices() == 16);
  CHECK(c.nvlink_bw_Bps == 900e9);  // 1.8 TB/s bidirectional per GPU
  CHECK(c.nics_per_node == 8);
  CHECK(c.nic_bw_Bps == 50e9);                     // ConnectX-7 400 Gb/s
  CHECK(c.host_flops == 2 * 56 * 2.1e9 * 64 / 8);  // 1.8816e12: dual Xeon Platinum 8570, per GPU
  CHECK(c.comm.intra_node.name == "nvlink5");
  CHECK(c.comm.inter_node.name == "ib-ndr");
}

// NVL36: 9 compute trays of 4 GPUs share one NVLink domain; a tensor-parallel group of 16 stays inside it.
// amd-mi300x: each pair of its 8 GPUs joined by one 64 GB/s Infinity Fabric link (ROCm MI300 docs, AMD's xGMI blog).
// PCIe servers: H100 PCIe bridged in pairs (3 NVLink bridges, 600 GB/s bidirectional per pair: H100 data sheet),
// A100 PCIe with no NVLink, GPUs in pairs under PCIe switches, two sockets.
TEST_CASE("pcie-h100-nvlink-pairs bridges GPUs in pairs, pcie-a100 has PCIe switches and two sockets") {
  ClusterSpec h = cluster(R"("pcie-h100-nvlink-pairs")");
  CHECK(h.accelerator.name == "h100-pcie");
  CHECK(h.accelerator.peak_bf16_flops == 756e12);
  CHECK(h.node_links.links(0, 1) * h.node_links.link_bw_Bps == 300e9);
  CHECK(h.node_links.links(1, 2) == 0);
  CHECK(h.node_links.links(6, 7) == 3);
  ClusterSpec a = cluster(R"("pcie-a100")");
  CHECK(a.accelerator.name == "a100-80gb-pcie");
  CHECK(a.accelerator.hbm_bw_Bps == 1935e9);
  CHECK(a.node_links.kind == NodeLinks::Pcie);
  CHECK(a.node_links.gpus_per_switch == 2);
  CHECK(a.node_links.numa_domains == 2);
}

TEST_CASE("amd-mi300x is an 8-GPU full mesh of 64 GB/s links with the mi300x accelerator") {
  ClusterSpec c = cluster(R"("amd-mi300x")");
  CHECK(c.accelerator.name == "mi300x");
  CHECK(c.accelerator.peak_bf16_flops == 1307.4e12);
  CHECK(c.accelerator.hbm_bw_Bps == 5.3e12);
  CHECK(c.node_links.kind == NodeLinks::Mesh);
  CHECK(c.node_links.pairs.size() == 28);  // 8 x 7 / 2
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) CHECK(c.node_links.links(a, b) == (a == b ? 0 : 1));
  CHECK(c.node_links.link_bw_Bps == 64e9);
  CHECK(c.comm.intra_node.name == "xgmi-mi300x");
}

TEST_CASE("gb200-nvl36 is one 36-GPU NVLink domain per node, dgx-h200 the DGX H100 node with H200") {
  ClusterSpec c = cluster(R"({"preset": "gb200-nvl36", "nodes": 2})");
  CHECK(c.devices() == 72);
  CHECK(c.gpus_per_node == 36);
  CHECK(c.nics_per_node == 36);
  CHECK(c.accelerator.name == "gb200");
  CHECK(c.nvlink_bw_Bps == 900e9);
  ClusterSpec h = cluster(R"("dgx-h200")");
  CHECK(h.accelerator.name == "h200");
  CHECK(h.accelerator.hbm_bw_Bps == 4.8e12);  // DGX H200 data sheet: 4.8 TB/s per GPU
  CHECK(h.nvlink_bw_Bps == 450e9);
}

TEST_CASE("gb200-nvl72 is one 72-GPU NVLink domain per node (GB200 NVL72 data sheet)") {
  ClusterSpec c = cluster(R"("gb200-nvl72")");
  CHECK(c.devices() == 72);
  CHECK(c.gpus_per_node == 72);
  CHECK(c.accelerator.name == "gb200");                      // its own profile, B200's GEMM shape curve
  CHECK(c.accelerator.peak_bf16_flops == 2500e12);           // 360 PFLOP/s sparse per 72 GPUs, dense one half
  CHECK(c.accelerator.hbm_bytes == 189471.0 * 1024 * 1024);  // nvidia-smi's total on a GB200 (189,471 MiB)
  CHECK(c.accelerator.profile.gemm_k_overhead == accelerator_preset("b200", "a").profile.gemm_k_overhead);
  CHECK(c.nvlink_bw_Bps == 900e9);
  CHECK(c.nics_per_node == 72);
  CHECK(c.nic_bw_Bps == 50e9);
  CHECK(c.pcie_bw_Bps == 225e9);  // NVLink-C2C 450 GB/s per direction shared by two GPUs
  CHECK(c.host_memory_bytes == 36 * 480e9);
  CHECK(c.host_memory_bw_Bps == 36 * 512e9);
  CHECK(c.comm.intra_node.name == "nvlink5");
}

TEST_CASE("hgx-h800 is a DGX H100 node with H800s and NVLink at 200 GB/s per direction") {
  ClusterSpec c = cluster(R"("hgx-h800")");
  CHECK(c.accelerator.name == "h800");
  CHECK(c.accelerator.peak_bf16_flops == 989.4e12);
  CHECK(c.nvlink_bw_Bps == 200e9);
  CHECK(c.comm.intra_node.name == "nvlink4-h800");
  CHECK(c.comm.intra_node.link_bw_Bps == 200e9);  // the simulator's links and NCCL's fabric agree
  CHECK(c.comm.intra_node.bus_efficiency == fabric_preset("nvlink4", "a").bus_efficiency);
  // The preset spelled as an object keeps the cut, and the report's echo parses back.
  ClusterSpec object = cluster(R"({"preset": "hgx-h800", "nodes": 2})");
  CHECK(object.nvlink_bw_Bps == 200e9);
  CHECK(parse_cluster(cluster_to_json(object)).nvlink_bw_Bps == 200e9);
}

TEST_CASE("hgx-a800 is a DGX A100 node with A800s and NVLink at 200 GB/s per direction") {
  ClusterSpec c = cluster(R"("hgx-a800")");
  ClusterSpec a100 = cluster(R"("dgx-a100")");
  CHECK(c.accelerator.name == "a800");
  CHECK(c.accelerator.peak_bf16_flops == 312e12);
  CHECK(c.accelerator.hbm_bytes == a100.accelerator.hbm_bytes);
  CHECK(c.accelerator.hbm_bw_Bps == 2039e9);
  CHECK(c.nvlink_bw_Bps == 200e9);  // dgx-a100: 300e9
  CHECK(a100.nvlink_bw_Bps == 300e9);
  CHECK(c.comm.intra_node.name == "nvlink3-a800");
  CHECK(c.comm.intra_node.link_bw_Bps == 200e9);
  CHECK(c.comm.intra_node.bus_efficiency == fabric_preset("nvlink3", "a").bus_efficiency);
  CHECK(c.comm.inter_node.name == a100.comm.inter_node.name);
  CHECK(c.nics_per_node == a100.nics_per_node);
  CHECK(c.nic_bw_Bps == a100.nic_bw_Bps);
  ClusterSpec object = cluster(R"({"preset": "hgx-a800", "nodes": 4})");
  CHECK(object.nodes == 4);
  CHECK(parse_cluster(cluster_to_json(object)).nvlink_bw_Bps == 200e9);
}

// MFU is quoted against the rated peak: a power-limited GPU's utilization is not inflated by its lower peak.
TEST_CASE("MFU under a power limit counts against the rated peak") {
  Experiment e = test::experiment(R"({"model": "llama3-8b", "training": {"global_batch": 8, "micro_batch": 1},
                                      "strategy": {"preset": "fsdp", "dp": 8}})");
  Analysis a = analyze(e);
  SimResult r;
  r.step_time_s = 2.0;
  r.devices.resize(8);
  ClusterSpec rated = cluster(R"("dgx-h100")");
  ClusterSpec limited =
      cluster(R"({"preset": "dgx-h100", "accelerator": {"preset": "h100-sxm", "power_limit_w": 500}})");
  CHECK(sim_figures(e, limited, a, r).mfu == Approx(sim_figures(e, rated, a, r).mfu));
  CHECK(sim_figures(e, rated, a, r).mfu == Approx(a.model_flops_per_step / (2.0 * 8 * 989.4e12)));
}

// A 500 W limit on a 700 W H100: the h100-sxm profile's measured scale at 500 W (0.8442, fitted to FBGEMM's GEMMs at
// 500 W), HBM unchanged; the report's cluster echo holds the rated peaks and the limit.
TEST_CASE("A power limit scales an accelerator's peaks by its measured scale and round-trips") {
  ClusterSpec c = cluster(R"({"preset": "dgx-h100", "accelerator": {"preset": "h100-sxm", "power_limit_w": 500,
                                                                    "hbm_bytes": "96GB", "hbm_bw": "2.4TB/s"}})");
  CHECK(c.accelerator.compute_scale == 0.8442);
  CHECK(c.accelerator.compute_scale_basis == ScaleBasis::Measured);
  CHECK(c.accelerator.peak_bf16_flops == Approx(989.4e12 * 0.8442));
  CHECK(c.accelerator.peak_fp32_flops == Approx(66.9e12 * 0.8442));
  CHECK(c.accelerator.hbm_bw_Bps == 2.4e12);
  Json echoed = cluster_to_json(c);
  CHECK(echoed["accelerator"]["power_limit_w"] == 500);
  CHECK(echoed["accelerator"]["peak_bf16_flops"].get<double>() == Approx(989.4e12));
  // The echo names no preset (a custom accelerator, without the preset's profile): it keeps the rated peaks and the
  // limit through a parse.
  const Json again = cluster_to_json(parse_cluster(echoed))["accelerator"];
  CHECK(again["peak_bf16_flops"].get<double>() == Approx(989.4e12));
  CHECK(again["peak_fp8_flops"].get<double>() == Approx(1979e12));
  CHECK(again["power_limit_w"] == 500);
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-h100", "accelerator": {"preset": "h100-sxm", "power_limit_w": 800}})"),
                    Catch::Contains("cluster.accelerator.power_limit_w") && Catch::Contains("rated 700 W"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-h100", "accelerator": {"preset": "h100-sxm", "power_limit_w": 150}})"),
                    Catch::Contains("below a quarter"));
  CHECK_THROWS_WITH(cluster(R"({"preset": "dgx-h100", "accelerator": {"peak_bf16_flops": "500TFLOP/s",
                                 "hbm_bytes": "80GB", "power_limit_w": 300}})"),
                    Catch::Contains("needs the rated power"));
}

// Between the measured 500 W and the rated 700 W (scale 1) the scale is interpolated: at 600 W, 0.8442 + 0.1558 / 2 =
// 0.9221. Below 500 W it is the measured scale times the limit over 500 W: at 400 W, 0.8442 x 0.8 = 0.67536. An
// accelerator without measured limits (H200) keeps the linear estimate: 500 / 700.
TEST_CASE("Power limits between and below the measured ones, and without any") {
  auto at = [](const char* preset, int w) {
    return cluster(std::string(R"({"preset": "dgx-h100", "accelerator": {"preset": ")") + preset +
                   R"(", "power_limit_w": )" + std::to_string(w) + "}}")
        .accelerator;
  };
  CHECK(at("h100-sxm", 600).compute_scale == Approx(0.9221).epsilon(1e-12));
  CHECK(at("h100-sxm", 600).compute_scale_basis == ScaleBasis::Interpolated);
  CHECK(at("h100-sxm", 400).compute_scale == Approx(0.67536).epsilon(1e-12));
  CHECK(at("h100-sxm", 400).compute_scale_basis == ScaleBasis::BelowMeasured);
  CHECK(at("h200", 500).compute_scale == Approx(500.0 / 700).epsilon(1e-12));
  CHECK(at("h200", 500).compute_scale_basis == ScaleBasis::Linear);
  CHECK(at("h100-sxm", 700).compute_scale == 1);
  // Two measured limits: interpolated between them.
  ComputeProfile p;
  p.power_scales = {{400, 0.6}, {500, 0.8}};
  ScaleBasis basis = ScaleBasis::Rated;
  CHECK(power_limited_scale(p, 700, 450, &basis) == Approx(0.7).epsilon(1e-12));
  CHECK(basis == ScaleBasis::Interpolated);
  CHECK(power_limited_scale(p, 700, 400, &basis) == 0.6);
  CHECK(basis == ScaleBasis::Measured);
  CHECK(power_limited_scale(p, 700, 300, &basis) == Approx(0.45).epsilon(1e-12));
}
