// Neighbours (cluster.background_load): other jobs' traffic takes a fraction of every link above the leaf switches,
// hand-computed on two nodes under two leaves. Each TEST_CASE that simulates runs in its own process (ctest).
#include <catch2/catch.hpp>

#include "sim/backend/Simulator.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "tests/Helpers.hpp"
#include "tests/SimFixtures.hpp"
#include "topology/cluster/Fabric.hpp"

using namespace placesim;

namespace {

// Two nodes of one GPU and one NIC of 10 GB/s, radix 2: one NIC port per leaf, so the nodes sit under two leaves
// joined by spine ports of the NIC's bandwidth (full bisection). Raw link figures (comm_model "links").
ClusterSpec two_leaves(double load) {
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
                            {"background_load", load}});
}

// gpu 0 -> gpu 1 crosses NIC 0 up (2 us + half a switch), spine port 0 up and spine port 1 down (0.5 us each) and
// NIC 1 down: 5.5 us, and 1 GB at the slowest link.
double transfer_s(double load) {
  TaskGraph g = test::empty_graph(2);
  g.add(P2P{0, 1, 1e9}, 0);
  return simulate(g, two_leaves(load), {}).step_time_s;
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
