// Hand-computed timings on tiny platforms (raw link figures, comm_model "links"): each TEST_CASE runs one
// simulation in its own process.
#include <catch2/catch.hpp>

#include "sim/backend/Simulator.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "tests/SimFixtures.hpp"

using namespace placesim;

namespace {

using test::empty_graph;

// One node of 8 GPUs on an NVSwitch: 100 GB/s and 1 us per NVLink direction; a route GPU -> GPU crosses two links.
ClusterSpec node() {
  return test::links_node(8);
}

Collective allreduce(int group, std::int64_t bytes) {
  Collective c;
  c.op = CollectiveOp::AllReduce;
  c.group = group;
  c.elems = bytes / 2;
  c.elem_bytes = 2;
  return c;
}

const double alpha = 2e-6;  // two links of 1 us
const double bw = 100e9;

}  // namespace

TEST_CASE("One transfer takes its route latency plus bytes over bandwidth") {
  TaskGraph g = empty_graph(8);
  g.add(P2P{0, 1, 1e9}, 0);
  SimResult r = simulate(g, node(), {});
  CHECK(r.step_time_s == Approx(alpha + 1e9 / bw).epsilon(1e-12));  // 10.002 ms
  CHECK(r.devices[0].bytes_sent[static_cast<std::size_t>(CommClass::PpP2P)] == 1e9);
}

TEST_CASE("Two flows sharing a link each get half of it") {
  TaskGraph g = empty_graph(8);
  g.add(P2P{0, 1, 1e9}, 0);
  g.add(P2P{0, 2, 1e9}, 0);  // both leave through gpu0's NVLink
  SimResult r = simulate(g, node(), {});
  CHECK(r.step_time_s == Approx(alpha + 2e9 / bw).epsilon(1e-12));
}

TEST_CASE("A ring all-reduce step by step takes 2(N-1)(alpha + X/(N B))") {
  TaskGraph g = empty_graph(8);
  int group = g.add_group({0, 1, 2, 3, 4, 5, 6, 7});
  g.add(allreduce(group, 800000000), 0);
  SimOptions full;
  full.fidelity = Fidelity::Full;
  SimResult r = simulate(g, node(), full);
  const double n = 8, x = 8e8;
  CHECK(r.step_time_s == Approx(2 * (n - 1) * (alpha + x / (n * bw))).epsilon(1e-9));  // 14.028 ms
  CHECK(r.activities == 8 * 14);
  CHECK(r.devices[3].bytes_sent[static_cast<std::size_t>(CommClass::DpGradSync)] == 2 * 7 * 1e8);
}

TEST_CASE("A ring all-reduce inside a node as one exact delay takes the same time") {
  TaskGraph g = empty_graph(8);
  int group = g.add_group({0, 1, 2, 3, 4, 5, 6, 7});
  g.add(allreduce(group, 800000000), 0);
  SimResult r = simulate(g, node(), {});
  CHECK(r.step_time_s == Approx(2 * 7 * (alpha + 8e8 / (8 * bw))).epsilon(1e-9));
  CHECK(r.activities == 0);
  CHECK(r.timers == 1);
  CHECK(r.devices[3].bytes_sent[static_cast<std::size_t>(CommClass::DpGradSync)] == 2 * 7 * 1e8);
}

namespace {

// Two nodes of 4 GPUs, a NIC per GPU (10 GB/s), rail-optimized: a same-rail route crosses one switch, 2 x 2 us of NIC
// plus 1 us of switch = 5 us.
ClusterSpec two_nodes() {
  ClusterSpec c = node();
  c.nodes = 2;
  c.gpus_per_node = 4;
  c.nics_per_node = 4;
  c.nic_bw_Bps = 10e9;
  c.nic_latency_s = 2e-6;
  c.switch_latency_s = 1e-6;
  c.fabric = FabricTopology::RailOptimized;
  return c;
}

// An 800 MB all-reduce over all 8 GPUs: 14 steps of 100 MB chunks. The two node crossings each spread their chunk
// over the 4 rails (25 MB per NIC), so the slowest hop is 5 us + 1e8 / (4 x 10 GB/s) = 2.505 ms, not the 10.005 ms
// one NIC would take.
SimResult ring_across_nodes(Fidelity fidelity) {
  TaskGraph g = empty_graph(8);
  int group = g.add_group({0, 1, 2, 3, 4, 5, 6, 7});
  g.add(allreduce(group, 800000000), 0);
  SimOptions o;
  o.fidelity = fidelity;
  return simulate(g, two_nodes(), o);
}

}  // namespace

TEST_CASE("A ring across nodes spreads each crossing over the group's rails: exact delay") {
  SimResult r = ring_across_nodes(Fidelity::Analytic);
  CHECK(r.step_time_s == Approx(14 * (5e-6 + 1e8 / 40e9)).epsilon(1e-9));  // 35.07 ms
  CHECK(r.activities == 0);
}

TEST_CASE("A ring across nodes spreads each crossing over the group's rails: flows") {
  SimResult r = ring_across_nodes(Fidelity::Flow);
  CHECK(r.step_time_s == Approx(14 * (5e-6 + 1e8 / 40e9)).epsilon(1e-6));
  CHECK(r.activities == 6 * 14 + 2 * 14 * 4);  // six NVLink hops, two crossings of four rails each
  // Bytes are the ring ranks' own, whichever NIC carried them: 2 (N - 1) chunks each, as the analytic model counts.
  for (int x : {0, 3, 4, 7}) CHECK(r.devices[x].bytes_sent[static_cast<std::size_t>(CommClass::DpGradSync)] == 14e8);
}

namespace {

// Two such all-reduces at once share every NIC. Flows split each link (each crossing of 2 x 25 MB
// per NIC takes twice as long); the analytic fidelity gives each half of each NIC, and says for how long
// they shared it.
SimResult two_at_once(Fidelity fidelity) {
  TaskGraph g = empty_graph(8);
  int group = g.add_group({0, 1, 2, 3, 4, 5, 6, 7});
  Collective gather = allreduce(group, 800000000);
  gather.stream = Stream::DpGather;
  g.add(allreduce(group, 800000000), 0);
  g.add(gather, 0);
  SimOptions o;
  o.fidelity = fidelity;
  return simulate(g, two_nodes(), o);
}

const double alone = 14 * (5e-6 + 1e8 / 40e9);  // 35.07 ms, as above

}  // namespace

TEST_CASE("Analytic fidelity shares a NIC between overlapping inter-node collectives and measures for how long") {
  SimResult analytic = two_at_once(Fidelity::Analytic);
  // Each at half rate: 2 x 35.07 ms, its latency stretched too (flows: 70.07 ms, below).
  CHECK(analytic.step_time_s == Approx(2 * alone).epsilon(1e-9));
  CHECK(analytic.nic_overlap_s == Approx(alone).epsilon(1e-9));  // the excess load of two planned side by side
  CHECK(analytic.nic_overlap_node == 0);
  CHECK(analytic.nic_overlap_rail == 0);
}

TEST_CASE("Flows share the NICs the analytic fidelity counted as overlapped") {
  SimResult flow = two_at_once(Fidelity::Flow);
  CHECK(flow.step_time_s == Approx(14 * (5e-6 + 2e8 / 40e9)).epsilon(1e-6));  // 70.07 ms: the shared NICs
  CHECK(flow.nic_overlap_s == 0);  // measured at analytic fidelity only: flows share links themselves
}

// Three at once: the excess load is 2 x 35.07 ms, not the 35.07 ms during which two or more ran; shared, each takes
// three times as long.
TEST_CASE("Analytic fidelity counts the excess load of three collectives on a NIC twice and shares it in three") {
  TaskGraph g = empty_graph(8);
  int group = g.add_group({0, 1, 2, 3, 4, 5, 6, 7});
  for (Stream stream : {Stream::DpComm, Stream::DpGather, Stream::TpComm}) {
    Collective c = allreduce(group, 800000000);
    c.stream = stream;
    g.add(c, 0);
  }
  SimOptions o;
  o.fidelity = Fidelity::Analytic;
  SimResult r = simulate(g, two_nodes(), o);
  CHECK(r.step_time_s == Approx(3 * alone).epsilon(1e-9));
  CHECK(r.nic_overlap_s == Approx(2 * alone).epsilon(1e-9));
}

TEST_CASE("One collective alone shares no NIC at analytic fidelity") {
  CHECK(ring_across_nodes(Fidelity::Analytic).nic_overlap_s == 0);
}

TEST_CASE("A compute task takes its FLOPs over the effective rate") {
  TaskGraph g = empty_graph(8);
  // 156 TFLOP at an effective 312 TFLOP/s x 0.5 = 156 TFLOP/s: one second.
  const double flops = 156e12, rate = 312e12 * 0.5;
  g.add(Compute{TaskKind::Forward, 0, flops / rate, flops}, 0);
  SimResult r = simulate(g, node(), {});
  CHECK(r.step_time_s == Approx(1.0).epsilon(1e-12));
  CHECK(r.devices[0].flops == flops);
}

namespace {

// backward 1 (1 s) -> backward 2 (1 s); the gradient all-reduce of the first layer (4 ms over 2 GPUs) runs after
// backward 1 or after backward 2; the optimizer (0.5 s) waits for everything.
double step_with_allreduce_after(int which) {
  TaskGraph g = empty_graph(8);
  int pair = g.add_group({0, 1});
  TaskId b1 = g.add(Compute{TaskKind::Backward, 0, 1.0}, 0);
  TaskId b1x = g.add(Compute{TaskKind::Backward, 1, 1.0}, 0);
  TaskId b2 = g.add(Compute{TaskKind::Backward, 0, 1.0}, 0);
  TaskId b2x = g.add(Compute{TaskKind::Backward, 1, 1.0}, 0);
  g.depend(b1, b2);
  g.depend(b1x, b2x);
  TaskId ar = g.add(allreduce(pair, 100000000000), 0);  // 2 (2-1) (2us + 1e11/(2 x 1e11)) = 1.000004 s
  g.depend(which == 1 ? b1 : b2, ar);
  g.depend(which == 1 ? b1x : b2x, ar);
  for (int x : {0, 1}) {
    TaskId opt = g.add(Compute{TaskKind::Optimizer, x, 0.5}, 0);
    g.depend(ar, opt);
    g.depend(x == 0 ? b2 : b2x, opt);
  }
  return simulate(g, node(), {}).step_time_s;
}

}  // namespace

TEST_CASE("DP communication overlapping backward compute shortens the step by the overlapped amount") {
  // Overlapped: the all-reduce (1.000004 s) runs beside backward 2 (1 s); only 4 us stay exposed.
  // 1 + max(1, 1.000004) + 0.5 = 2.500004 s, against 1 + 1 + 1.000004 + 0.5 = 3.500004 s serialised:
  // the step is shorter by the overlapped second.
  CHECK(step_with_allreduce_after(1) == Approx(2.500004).epsilon(1e-12));
}

TEST_CASE("DP communication after the whole backward is fully exposed") {
  CHECK(step_with_allreduce_after(2) == Approx(3.500004).epsilon(1e-12));
}
