// Rails, leaves and routes of topology/cluster/Fabric on tiny clusters, without SimGrid.
#include <catch2/catch.hpp>

#include "tests/Helpers.hpp"
#include "topology/cluster/Fabric.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using Catch::Contains;

namespace {

// Nodes of `gpus` GPUs and `nics` NICs; radix 4 = two NIC ports per leaf. Latencies chosen so sums are exact.
ClusterSpec tiny(int nodes, int gpus, int nics, const std::string& fabric, double oversubscription) {
  return parse_cluster(Json{{"accelerator", "a100-80gb"},
                            {"nodes", nodes},
                            {"gpus_per_node", gpus},
                            {"nics_per_node", nics},
                            {"fabric", fabric},
                            {"switch_radix", 4},
                            {"oversubscription", oversubscription},
                            {"nvlink_latency", "1us"},
                            {"nic_latency", "2us"},
                            {"switch_latency", "0.5us"},
                            {"nic_bw", "10GB/s"}});
}

Hop up(LinkKind kind, int index) {
  return {{kind, index}, true};
}
Hop down(LinkKind kind, int index) {
  return {{kind, index}, false};
}

}  // namespace

TEST_CASE("GPUs share NICs in contiguous groups") {
  Fabric f(tiny(1, 8, 2, "fat-tree", 1));
  for (int local = 0; local < 4; ++local) CHECK(f.rail(local) == 0);
  for (int local = 4; local < 8; ++local) CHECK(f.rail(local) == 1);
  Fabric rails(tiny(1, 8, 8, "fat-tree", 1));
  for (int local = 0; local < 8; ++local) CHECK(rails.rail(local) == local);
}

TEST_CASE("fat-tree leaves take NICs in node-major order") {
  Fabric f(tiny(3, 2, 1, "fat-tree", 2));
  CHECK(f.leaf(0, 0) == 0);
  CHECK(f.leaf(1, 0) == 0);
  CHECK(f.leaf(2, 0) == 1);
  CHECK(f.leaves() == 2);
  // Leaf 0 has two NICs of 10 GB/s, leaf 1 only one; oversubscription 2 halves their sum.
  CHECK(f.link({LinkKind::LeafUplink, 0}).bw_Bps == 10e9);
  CHECK(f.link({LinkKind::LeafUplink, 1}).bw_Bps == 5e9);
  CHECK(f.link_count(LinkKind::LeafUplink) == 2);
  CHECK(f.link_count(LinkKind::SpinePort) == 0);
}

TEST_CASE("rail-optimized leaves group one rail of a scalable unit") {
  Fabric f(tiny(4, 2, 2, "rail-optimized", 1));  // units of 2 nodes, 2 rails: 4 leaves
  CHECK(f.leaf(0, 0) == 0);
  CHECK(f.leaf(1, 0) == 0);
  CHECK(f.leaf(0, 1) == 1);
  CHECK(f.leaf(1, 1) == 1);
  CHECK(f.leaf(2, 0) == 2);
  CHECK(f.leaf(3, 1) == 3);
  CHECK(f.leaves() == 4);
  CHECK(f.link_count(LinkKind::SpinePort) == 8);
  CHECK(f.link_count(LinkKind::LeafUplink) == 0);
}

TEST_CASE("a route inside a node crosses the two GPUs' NVLinks") {
  Fabric f(tiny(2, 2, 2, "rail-optimized", 1));
  CHECK(f.route(0, 1) == std::vector<Hop>{up(LinkKind::NvLink, 0), down(LinkKind::NvLink, 1)});
  CHECK(f.latency_s(f.route(0, 1)) == Approx(2e-6).epsilon(1e-12));
}

TEST_CASE("same rail inside a unit crosses one switch and another rail three") {
  Fabric f(tiny(2, 2, 2, "rail-optimized", 1));
  CHECK(f.route(0, 2) == std::vector<Hop>{up(LinkKind::Nic, 0), down(LinkKind::Nic, 2)});
  CHECK(f.latency_s(f.route(0, 2)) == Approx(2 * 2e-6 + 0.5e-6).epsilon(1e-12));
  CHECK(f.route(0, 3) == std::vector<Hop>{up(LinkKind::Nic, 0), up(LinkKind::SpinePort, 0),
                                          down(LinkKind::SpinePort, 3), down(LinkKind::Nic, 3)});
  CHECK(f.latency_s(f.route(0, 3)) == Approx(2 * 2e-6 + 3 * 0.5e-6).epsilon(1e-12));
}

TEST_CASE("an oversubscribed fabric routes across leaves through the shared uplinks") {
  Fabric f(tiny(4, 1, 1, "fat-tree", 2));
  CHECK(f.route(0, 1) == std::vector<Hop>{up(LinkKind::Nic, 0), down(LinkKind::Nic, 1)});
  CHECK(f.route(1, 2) == std::vector<Hop>{up(LinkKind::Nic, 1), up(LinkKind::LeafUplink, 0),
                                          down(LinkKind::LeafUplink, 1), down(LinkKind::Nic, 2)});
  CHECK(f.latency_s(f.route(1, 2)) == Approx(2 * 2e-6 + 3 * 0.5e-6).epsilon(1e-12));
}

TEST_CASE("a GPU reaches its host CPU over its own PCIe link") {
  Fabric f(tiny(2, 2, 2, "fat-tree", 1));
  CHECK(f.host_route(3) == std::vector<Hop>{up(LinkKind::Pcie, 3)});
}

TEST_CASE("link names say which node and rail a NIC belongs to") {
  Fabric f(tiny(2, 4, 2, "fat-tree", 1));
  CHECK(f.link({LinkKind::Nic, 3}).name == "nic-1.1");
  CHECK(f.link({LinkKind::SpinePort, 2}).name == "spine-1.0");
  CHECK(f.link({LinkKind::NvLink, 5}).name == "nvlink-5");
  CHECK(f.link({LinkKind::Nic, 3}).latency_s == Approx(2e-6 + 0.25e-6).epsilon(1e-12));
}

TEST_CASE("a route to a device out of range names both devices") {
  Fabric f(tiny(2, 2, 2, "fat-tree", 1));
  CHECK_THROWS_WITH(f.route(1, 4),
                    Contains("transfer device 1 -> device 4: device 4 is out of range") && Contains("4 devices"));
  CHECK_THROWS_WITH(f.route(-1, 0), Contains("device -1 is out of range"));
  CHECK_THROWS_WITH(f.host_route(9), Contains("device 9 is out of range"));
}

TEST_CASE("a device has no route to itself") {
  Fabric f(tiny(2, 2, 2, "fat-tree", 1));
  CHECK_THROWS_WITH(f.route(2, 2), Contains("transfer device 2 -> device 2 has no route"));
}

TEST_CASE("a cluster built in code with NIC-less nodes is refused") {
  ClusterSpec c = tiny(1, 2, 0, "fat-tree", 1);
  c.nodes = 2;
  CHECK_THROWS_WITH(Fabric(c), Contains("cluster.nics_per_node=0 must be at least 1 when cluster.nodes=2"));
}

TEST_CASE("A ring's node crossings leave on every rail the group holds there, as NCCL's channels do") {
  using Transfers = std::vector<std::pair<int, int>>;
  Fabric rails(tiny(2, 4, 4, "rail-optimized", 1));
  auto hops = rails.ring_channels({0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(hops.size() == 8);
  CHECK(hops[0] == Transfers{{0, 1}});
  CHECK(hops[2] == Transfers{{2, 3}});
  CHECK(hops[3] == Transfers{{0, 4}, {1, 5}, {2, 6}, {3, 7}});  // node 0 -> node 1 on all four rails
  CHECK(hops[7] == Transfers{{4, 0}, {5, 1}, {6, 2}, {7, 3}});  // and back, closing the ring
  // One GPU per node (a data-parallel group beside tp = 4): one rail, one transfer.
  CHECK(rails.ring_channels({1, 5}) == std::vector<Transfers>{{{1, 5}}, {{5, 1}}});
  // A node with one member of the group has one rail to offer: the crossing stays a single transfer.
  CHECK(rails.ring_channels({0, 1, 4})[1] == Transfers{{1, 4}});
  // Two GPUs per NIC: two rails per node, each used by its lowest GPU.
  Fabric shared(tiny(2, 4, 2, "rail-optimized", 1));
  CHECK(shared.ring_channels({0, 1, 2, 3, 4, 5, 6, 7})[3] == Transfers{{0, 4}, {2, 6}});
}

// An NVL72 rack is one NVLink domain: a tensor-parallel group of 16 GPUs in it (four compute trays) rings over NVLink
// alone, every hop at one GPU's NVLink5 bandwidth (900 GB/s per direction), while the same group on DGX B200 nodes
// leaves each 8-GPU node by its 400 Gb/s NICs (50 GB/s each).
TEST_CASE("a TP 16 group inside a GB200 NVL72 rack rings over NVLink, on DGX B200 nodes over NICs") {
  std::vector<int> tp16(16);
  for (int i = 0; i < 16; ++i) tp16[static_cast<std::size_t>(i)] = i;
  Fabric rack(parse_cluster(Json{{"preset", "gb200-nvl72"}, {"nodes", 2}}));
  for (const auto& hop : rack.ring_channels(tp16))
    for (auto [from, to] : hop)
      for (const Hop& h : rack.route(from, to)) {
        CHECK(h.link.kind == LinkKind::NvLink);
        CHECK(rack.link(h.link).bw_Bps == 900e9);
      }
  Fabric dgx(parse_cluster(Json{{"preset", "dgx-b200"}, {"nodes", 2}}));
  int nic_hops = 0;
  for (const auto& hop : dgx.ring_channels(tp16))
    for (auto [from, to] : hop)
      for (const Hop& h : dgx.route(from, to))
        if (h.link.kind == LinkKind::Nic) {
          ++nic_hops;
          CHECK(dgx.link(h.link).bw_Bps == 50e9);
        }
  CHECK(nic_hops == 2 * 2 * 8);  // the two hops across nodes, each split over the 8 rails, a NIC at each end
}

namespace {

// The bandwidth a ring over `members` runs at, as the simulator takes it (Runner::group_ring): per hop, the slowest
// link its transfers cross times the number of transfers (the hop's bytes split over them), the slowest hop.
double ring_hop_bw(const Fabric& f, const std::vector<int>& members) {
  double ring = 1e300;
  for (const auto& transfers : f.ring_channels(members)) {
    double slowest = 1e300;
    for (auto [from, to] : transfers)
      for (const Hop& h : f.route(from, to)) slowest = std::min(slowest, f.link(h.link).bw_Bps);
    ring = std::min(ring, slowest * static_cast<double>(transfers.size()));
  }
  return ring;
}

ClusterSpec a100_node(const Json& node_links) {
  Json c{{"preset", "dgx-a100"}, {"nodes", 1}, {"pcie_bw", "25GB/s"}};
  if (!node_links.is_null()) c["node_links"] = node_links;
  return parse_cluster(c);
}

// Two 4-GPU NVLink3 boards in one node (HGX A100 4-GPU: 4 links of 25 GB/s between each pair of a board), joined by
// PCIe only.
Json two_boards() {
  Json pairs = Json::array();
  for (int board : {0, 4})
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) pairs.push_back(Json::array({board + a, board + b, 4}));
  return Json{{"kind", "mesh"}, {"link_bw", "25GB/s"}, {"pairs", pairs}};
}

}  // namespace

// A TP 8 ring, by hand: on NVSwitch every hop has a GPU's 300 GB/s; on two NVLink boards the hops 3 -> 4 and 7 -> 0
// have no link and cross PCIe (25 GB/s), 12 x slower, while a TP 4 group on one board runs three rings (shifts 1, 2,
// 3) over 100 GB/s pair links, 300 GB/s; on PCIe alone (switches of 2 GPUs, two NUMA domains joined at 20 GB/s) the
// hop from GPU 3 to 4 crosses the CPUs' link, 20 GB/s.
TEST_CASE("A TP 8 ring on NVSwitch, on two 4-GPU NVLink boards and on PCIe, by hand") {
  const std::vector<int> tp8{0, 1, 2, 3, 4, 5, 6, 7}, tp4{0, 1, 2, 3};
  CHECK(ring_hop_bw(Fabric(a100_node(nullptr)), tp8) == Approx(300e9));
  const Fabric boards(a100_node(two_boards()));
  CHECK(ring_hop_bw(boards, tp8) == Approx(25e9));
  CHECK(boards.route(3, 4) == std::vector<Hop>{up(LinkKind::Pcie, 3), down(LinkKind::Pcie, 4)});
  CHECK(ring_hop_bw(boards, tp4) == Approx(3 * 4 * 25e9));
  CHECK(boards.ring_channels(tp4)[0].size() == 3);
  const Fabric pcie(a100_node(Json{
      {"kind", "pcie"}, {"gpus_per_switch", 2}, {"switch_bw", "32GB/s"}, {"numa_domains", 2}, {"numa_bw", "20GB/s"}}));
  CHECK(ring_hop_bw(pcie, tp8) == Approx(20e9));
  CHECK(pcie.route(0, 1) == std::vector<Hop>{up(LinkKind::Pcie, 0), down(LinkKind::Pcie, 1)});
  CHECK(pcie.route(1, 2) == std::vector<Hop>{up(LinkKind::Pcie, 1), up(LinkKind::PcieSwitch, 0),
                                             down(LinkKind::PcieSwitch, 1), down(LinkKind::Pcie, 2)});
  CHECK(pcie.route(5, 2) == std::vector<Hop>{up(LinkKind::Pcie, 5), up(LinkKind::PcieSwitch, 2),
                                             down(LinkKind::NumaLink, 0), down(LinkKind::PcieSwitch, 1),
                                             down(LinkKind::Pcie, 2)});
  // The time of a 1 GB all-reduce on the raw links: 2 (n - 1) steps of latency plus X / (n B) each.
  auto all_reduce = [](const Fabric& f, const std::vector<int>& m) {
    const double n = static_cast<double>(m.size());
    return 2 * (n - 1) * (f.latency_s(f.route(m[0], m[1])) + 1e9 / (n * ring_hop_bw(f, m)));
  };
  CHECK(all_reduce(boards, tp8) / all_reduce(Fabric(a100_node(nullptr)), tp8) == Approx(12).epsilon(0.01));
}

// MI300X's node: 8 GPUs, each pair joined by one Infinity Fabric link of 64 GB/s per direction (AMD: seven links per
// GPU), no switch. An 8-GPU ring runs as seven (shifts 1..7), 7 x 64 = 448 GB/s per GPU; a pair, one link: 64 GB/s,
// where a switch model would give it all 448.
TEST_CASE("MI300X's full mesh: 8 GPUs ring over all seven links, a pair over its one") {
  const Fabric mesh(a100_node(Json{{"kind", "mesh"}, {"link_bw", "64GB/s"}, {"full", 1}}));
  CHECK(ring_hop_bw(mesh, {0, 1, 2, 3, 4, 5, 6, 7}) == Approx(7 * 64e9));
  CHECK(ring_hop_bw(mesh, {0, 1}) == Approx(64e9));
  CHECK(ring_hop_bw(mesh, {0, 2, 4, 6}) == Approx(3 * 64e9));
  // Pair (2, 6): after GPU 0's 7 pairs and GPU 1's 6, the fourth of GPU 2's: 7 + 6 + 3 = 16.
  CHECK(mesh.route(6, 2) == std::vector<Hop>{down(LinkKind::MeshLink, 16)});
  CHECK(mesh.link({LinkKind::MeshLink, 16}).name == "mesh-0.2-6");
  CHECK(mesh.link({LinkKind::MeshLink, 27}).name == "mesh-0.6-7");
  CHECK_THROWS_WITH(a100_node(Json{{"kind", "mesh"}, {"link_bw", "64GB/s"}, {"pairs", {{0, 8, 1}}}}),
                    Contains("cluster.node_links.pairs[0]=[0,8,1] must join two different GPUs of 0..7"));
  CHECK_THROWS_WITH(a100_node(Json{{"kind", "pcie"}, {"gpus_per_switch", 3}}),
                    Contains("cluster.node_links.gpus_per_switch") && Contains("must divide"));
}

// The node shapes run end to end (platform, rings, report): a TP 8 step whose all-reduces are bandwidth-bound (32 MB
// at sequence 4096) is slowest where its ring crosses PCIe between NUMA domains, and
// the report's cluster gives the node's links back.
TEST_CASE("A TP 8 step simulates on a mesh and a PCIe node, slower than on NVSwitch") {
  const std::string base = std::string("simulate ") + PLACESIM_SOURCE_DIR +
                           "/examples/small-3d-1f1b.json --fidelity analytic --set strategy.tp=8 --set strategy.dp=1 "
                           "--set strategy.pp=1 --set cluster.nodes=1 --set model.hidden=4096 --set model.heads=32 "
                           "--set model.seq_len=4096";
  auto step = [&](const std::string& node_links) {
    const std::string report = std::string(PLACESIM_BINARY) + ".node-links.json";
    std::string out;
    REQUIRE(test::run_placesim(base + (node_links.empty() ? "" : " --set 'cluster.node_links=" + node_links + "'") +
                                   " --report " + report,
                               &out) == 0);
    const Json r = read_json_file(report);
    if (!node_links.empty()) {  // given back, and read back the same
      const ClusterSpec c = parse_cluster(r["cluster"]);
      CHECK(c.node_links.kind != NodeLinks::NvSwitch);
      CHECK(cluster_to_json(c)["node_links"] == r["cluster"]["node_links"]);
    }
    return r["simulation"]["step_time_s"].get<double>();
  };
  const double nvswitch = step("");
  const double boards = step(two_boards().dump());
  const double pcie =
      step(R"({"kind":"pcie","gpus_per_switch":2,"switch_bw":"32GB/s","numa_domains":2,"numa_bw":"20GB/s"})");
  CHECK(nvswitch < boards);
  CHECK(boards < pcie);
}
