// Imperfect fabrics, hand-computed on tiny clusters: neighbours (cluster.background_load: other jobs' traffic takes a
// fraction of every link above the leaf switches) and degraded links (cluster.degraded: a NIC, a rail, an NVLink or
// a leaf's uplinks at a fraction of its bandwidth, or down with its traffic rerouted). Each TEST_CASE that simulates
// runs in its own process (ctest).
#include <catch2/catch.hpp>
#include <fstream>

#include "sim/backend/Simulator.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "tests/Helpers.hpp"
#include "tests/SimFixtures.hpp"
#include "topology/cluster/Fabric.hpp"

using namespace placesim;

namespace {

// Two nodes of one GPU and one NIC of 10 GB/s, radix 2: one NIC port per leaf, so the nodes sit under two leaves
// joined by spine ports of the NIC's bandwidth (full bisection). Raw link figures (comm_model "links").
ClusterSpec two_leaves(double load, const Json& degraded = Json::object()) {
  return parse_cluster(Json{{"accelerator", "a100-80gb"},
                            {"nodes", 2},
                            {"gpus_per_node", 1},
                            {"nics_per_node", 1},
                            {"fabric", "fat-tree"},
                            {"switch_radix", 2},
                            {"nic_bw", "10GB/s"},
                            {"nic_latency", "2us"},
                            {"switch_latency", "0.5us"},
                            {"comm_model", "links"},
                            {"background_load", load},
                            {"degraded", degraded}});
}

// gpu 0 -> gpu 1 crosses NIC 0 up (2 us + half a switch), spine port 0 up and spine port 1 down (0.5 us each) and
// NIC 1 down: 5.5 us, and 1 GB at the slowest link.
double transfer_s(double load, const Json& degraded = Json::object()) {
  TaskGraph g = test::empty_graph(2);
  g.add(P2P{0, 1, 1e9}, 0);
  return simulate(g, two_leaves(load, degraded), {}).step_time_s;
}

}  // namespace

TEST_CASE("Neighbours: the spine ports keep what other jobs leave of them") {
  const Fabric f(two_leaves(0.3));
  CHECK(f.link({LinkKind::SpinePort, 0}).bw_Bps == Approx(7e9).epsilon(1e-15));
  CHECK(f.link({LinkKind::Nic, 0}).bw_Bps == 10e9);  // the job's own
}

TEST_CASE("Neighbours: a transfer across leaves on an empty fabric") {
  CHECK(transfer_s(0) == Approx(5.5e-6 + 1e9 / 10e9).epsilon(1e-9));
}

// 30 % taken: the spine ports leave 7 GB/s, below the NICs' 10.
TEST_CASE("Neighbours: a transfer across leaves with 30 % of the spine taken") {
  CHECK(transfer_s(0.3) == Approx(5.5e-6 + 1e9 / 7e9).epsilon(1e-9));
}

// Node 1's NIC at half its bandwidth: 5 GB/s is the slowest link of the route.
TEST_CASE("Degraded links: a NIC at 50 % slows the transfers through it") {
  CHECK(transfer_s(0, Json{{"nic 1.0", 0.5}}) == Approx(5.5e-6 + 1e9 / 5e9).epsilon(1e-9));
}

// One node of 4 GPUs on an NVSwitch (100 GB/s, 1 us per NVLink direction): gpu 0 -> gpu 1 crosses gpu 0's NVLink up
// and gpu 1's down, 2 us; gpu 1's at a quarter leaves 25 GB/s.
TEST_CASE("Degraded links: an NVLink at 25 % slows the transfers through it") {
  ClusterSpec c = test::links_node(4);
  c.nics_per_node = 1;
  c.degraded["nvlink 1"] = 0.25;
  TaskGraph g = test::empty_graph(4);
  g.add(P2P{0, 1, 1e9}, 0);
  CHECK(simulate(g, c, {}).step_time_s == Approx(2e-6 + 1e9 / 25e9).epsilon(1e-9));
}

TEST_CASE("Degraded links: cluster.degraded names each bad entry at once") {
  std::string out;
  CHECK(
      test::run_placesim("simulate --set 'cluster.degraded={\"nic 200.1\":0.5,\"rail 9\":0.5,\"nvlink 5\":1.5,\"x\":1,"
                         "\"leaf 0\":0}'",
                         &out) != 0);
  for (const char* problem : {"cluster.degraded.nic 200.1: the cluster has 128 nodes (0 to 127)",
                              "cluster.degraded.rail 9: the cluster has 8 rails (0 to 7)",
                              "cluster.degraded.nvlink 5=1.5 must be the fraction of its bandwidth left",
                              "cluster.degraded.x: name a link as",
                              "cluster.degraded.leaf 0=0: a leaf whose uplinks are all down cuts its NICs off"})
    CHECK_THAT(out, Catch::Contains(problem));
}

// A degraded rail is every node's: the blocks stay congruent, and the folded step equals every device's (the default
// GPT-3 175B on 128 DGX A100 nodes at analytic fidelity, rail 3 at half its bandwidth).
TEST_CASE("Degraded links: a degraded rail folds, and the folded step equals the unfolded one") {
  for (const char* left : {"0.5", "0"}) {  // at half its bandwidth, and down (its traffic on rail 4's NICs)
    INFO("rail 3 at " << left);
    double step[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      std::string out;
      const std::string report = "/tmp/placesim-rail-" + std::to_string(k) + ".json";
      REQUIRE(test::run_placesim(
                  "simulate --quiet --fidelity analytic --set 'cluster.degraded={\"rail 3\":" + std::string(left) +
                      "}' --symmetry " + std::string(k == 0 ? "on" : "off") + " --report " + report,
                  &out) == 0);
      if (k == 0) CHECK_THAT(out, Catch::Contains("congruent data-parallel blocks"));
      std::ifstream in(report);
      step[k] = Json::parse(in)["simulation"]["step_time_s"].get<double>();
    }
    // Blocks of one node do not hold whole leaf switches here, so block 0's transfers take the slowest congruent
    // route (Folding::note): the healthy fabric's folded and unfolded steps differ by 2.5e-8 of a step, and so do
    // these.
    CHECK(step[0] == Approx(step[1]).epsilon(1e-7));
  }
}

// Two nodes of two GPUs and two NICs (10 GB/s, 2 us; NVLink 100 GB/s, 1 us) on a rail-optimized fabric of radix 4:
// both nodes' rail-r NICs on leaf r, so same-rail transfers cross one switch (0.5 us, half on each NIC link).
ClusterSpec two_rails(const Json& degraded) {
  return parse_cluster(Json{{"accelerator", "a100-80gb"},
                            {"nodes", 2},
                            {"gpus_per_node", 2},
                            {"nics_per_node", 2},
                            {"fabric", "rail-optimized"},
                            {"switch_radix", 4},
                            {"nic_bw", "10GB/s"},
                            {"nic_latency", "2us"},
                            {"switch_latency", "0.5us"},
                            {"nvlink_bw", "100GB/s"},
                            {"nvlink_latency", "1us"},
                            {"pcie_bw", "20GB/s"},
                            {"pcie_latency", "3us"},
                            {"comm_model", "links"},
                            {"degraded", degraded}});
}

// gpu 0 -> gpu 2 and gpu 1 -> gpu 3 at once, 1 GB each, every transfer on its own rail: 2.25 us a NIC link (2 us
// and half the switch), 4.5 us + 0.1 s. With rail 1 down, gpu 1's transfer crosses to gpu 0 over NVLink (1 us up,
// 1 us down), leaves through node 0's rail-0 NIC, arrives on node 1's and crosses to gpu 3 over NVLink (8.5 us); the
// rail-0 NICs carry both gigabytes, busy from the first transfer's start at 4.5 us: 4.5 us + 2 GB / 10 GB/s.
double both_rails_s(const Json& degraded) {
  TaskGraph g = test::empty_graph(4);
  g.add(P2P{0, 2, 1e9}, 0);
  g.add(P2P{1, 3, 1e9}, 0);
  return simulate(g, two_rails(degraded), {}).step_time_s;
}

TEST_CASE("Links down: two transfers on their own rails") {
  CHECK(both_rails_s(Json::object()) == Approx(4.5e-6 + 1e9 / 10e9).epsilon(1e-12));
}

TEST_CASE("Links down: a rail down sends its traffic through the next rail's NICs, which it shares") {
  CHECK(both_rails_s(Json{{"rail 1", 0}}) == Approx(4.5e-6 + 2e9 / 10e9).epsilon(1e-12));
}

TEST_CASE("Links down: routes around a NIC down on one node and an NVLink down") {
  const Fabric nic(two_rails(Json{{"nic 0.1", 0}}));
  // Node 0's rail-1 NIC is down: gpu 1 leaves through gpu 0's NIC; node 1's rail-1 NIC is up, so the transfer
  // crosses from leaf 0 to leaf 1 through the spine.
  const std::vector<Hop> route = nic.route(1, 3);
  const std::vector<Hop> expected = {{{LinkKind::NvLink, 1}, true},     {{LinkKind::NvLink, 0}, false},
                                     {{LinkKind::Nic, 0}, true},        {{LinkKind::SpinePort, 0}, true},
                                     {{LinkKind::SpinePort, 3}, false}, {{LinkKind::Nic, 3}, false}};
  CHECK(route == expected);
  // gpu 1's NVLink down: it reaches gpu 0 through the host, 3 us each way at 20 GB/s.
  TaskGraph g = test::empty_graph(4);
  g.add(P2P{1, 0, 1e9}, 0);
  CHECK(simulate(g, two_rails(Json{{"nvlink 1", 0}}), {}).step_time_s == Approx(6e-6 + 1e9 / 20e9).epsilon(1e-9));
}

// Leaf 1's uplinks at half their bandwidth: the spine port of node 1's NIC leaves 5 GB/s.
TEST_CASE("Degraded links: a leaf's uplinks at 50 % slow the transfers across it") {
  CHECK(transfer_s(0, Json{{"leaf 1", 0.5}}) == Approx(5.5e-6 + 1e9 / 5e9).epsilon(1e-9));
}

TEST_CASE("Links down: a node with every NIC down is refused") {
  CHECK_THROWS_WITH(two_rails(Json{{"nic 1.0", 0}, {"nic 1.1", 0}}),
                    Catch::Contains("every NIC of node 1 is down, so nothing reaches it"));
  CHECK_THROWS_WITH(two_rails(Json{{"leaf 4", 0.5}}), Catch::Contains("cluster.degraded.leaf 4: the cluster has 2"));
}
