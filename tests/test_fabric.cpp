// Rails, leaves and routes of topology/cluster/Fabric on tiny clusters, without SimGrid.
#include <catch2/catch.hpp>

#include "topology/cluster/Fabric.hpp"

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
