// Overlap interference (ComputeProfile::intra_node_interference / inter_node_interference), hand-computed on tiny
// task graphs. Each TEST_CASE that simulates runs in its own process (ctest -R).
#include <catch2/catch.hpp>

#include "sim/backend/Simulator.hpp"
#include "strategies/calibrate/Calibration.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "tests/SimFixtures.hpp"
#include "topology/cluster/Cluster.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;

namespace {

// One node of 2 GPUs (raw links: 100 GB/s, 1 us per direction) or two nodes of one GPU each, with compute slowed
// 1.5 times and transfers 1.25 times while they overlap inside the node; none across nodes unless `inter`.
ClusterSpec cluster(int nodes, bool inter = false) {
  ClusterSpec c;
  c.accelerator = accelerator_preset("h100-sxm", "cluster.accelerator");
  c.accelerator.profile.intra_node_interference = {1.5, 1.25};
  c.accelerator.profile.inter_node_interference = inter ? OverlapInterference{2.0, 1.6} : OverlapInterference{};
  c.nodes = nodes;
  c.gpus_per_node = 2 / nodes;
  c.nics_per_node = 1;
  c.nvlink_bw_Bps = 100e9;
  c.nvlink_latency_s = 1e-6;
  c.nic_bw_Bps = 100e9;
  c.nic_latency_s = 0.5e-6;
  c.switch_latency_s = 0;
  c.comm_model = CommModel::Links;
  return c;
}

// A 2-rank all-gather of a 4e8-byte buffer: one ring step of 2e8 bytes, 2 us + 2e8 / 100e9 = 2.002 ms alone.
Collective gather(int group) {
  Collective c;
  c.op = CollectiveOp::AllGather;
  c.cls = CommClass::ZeroGather;
  c.stream = Stream::DpGather;
  c.group = group;
  c.elems = 200000000;
  c.elem_bytes = 2;
  return c;
}

const double gather_alone = 2e-6 + 2e8 / 100e9;

// Both GPUs start `compute_s` of compute and the collective `c` (over both) at time 0.
TaskGraph compute_beside(double compute_s, Collective c) {
  TaskGraph g = test::empty_graph(2);
  c.group = g.add_group({0, 1});
  g.add(Compute{TaskKind::Forward, 0, compute_s, 0}, 0);
  g.add(Compute{TaskKind::Forward, 1, compute_s, 0}, 0);
  g.add(c, 0);
  return g;
}

SimOptions at(Fidelity fidelity) {
  SimOptions o;
  o.fidelity = fidelity;
  return o;
}

}  // namespace

// Compute of 10 ms and a 2.002 ms all-gather start together on both GPUs. While they overlap the all-gather runs at
// 1/1.25 (ends at 1.25 x 2.002 = 2.5025 ms) and the compute at 1/1.5: by then it has done 2.5025 / 1.5 = 1.6683 ms of
// its 10 ms, and the remaining 8.3317 ms run alone, so it ends at 2.5025 + 8.3317 = 10.8342 ms (0.8342 ms lost).
TEST_CASE("Interference: a compute task and an all-gather overlapping on a node both slow by the profile's factors") {
  TaskGraph g = compute_beside(10e-3, gather(0));
  SimOptions o = at(Fidelity::Analytic);
  SimResult r = simulate(g, cluster(1), o);
  const double comm_end = 1.25 * gather_alone;
  const double compute_end = comm_end + (10e-3 - comm_end / 1.5);
  CHECK(r.step_time_s == Approx(compute_end).epsilon(1e-9));
  CHECK(r.devices[0].busy_s(Stream::DpGather) == Approx(comm_end).epsilon(1e-9));
  CHECK(r.devices[0].busy_s(Stream::Compute) == Approx(compute_end).epsilon(1e-9));
  CHECK(r.devices[1].interference_s == Approx(compute_end - 10e-3).epsilon(1e-6));
}

// Compute of 1 ms beside the same all-gather: the compute ends first, at 1.5 ms (it ran at 1/1.5 throughout), having
// let the all-gather do 1.5 / 1.25 = 1.2 ms of its 2.002 ms; the remaining 0.802 ms run alone: 2.302 ms.
TEST_CASE("Interference: a collective that outlasts the compute is slowed only while they overlap") {
  TaskGraph g = compute_beside(1e-3, gather(0));
  SimOptions o = at(Fidelity::Analytic);
  SimResult r = simulate(g, cluster(1), o);
  CHECK(r.devices[0].busy_s(Stream::Compute) == Approx(1.5e-3).epsilon(1e-9));
  CHECK(r.step_time_s == Approx(1.5e-3 + gather_alone - 1.5e-3 / 1.25).epsilon(1e-9));
}

// The same as flows at full fidelity: the ring step flows at the links' pace for its 2 us + 2 ms, all of it beside its
// sender's compute, so it owes 2.002 ms x (1 - 1 / 1.25) of work after it, at 1 / 1.25 while the compute still runs:
// 1.25 x 2.002 ms = 2.5025 ms in all, as the exact delay at analytic fidelity takes; the compute runs slowed for
// exactly that long.
TEST_CASE("Interference: ring-step flows are slowed beside compute and slow the compute while in flight") {
  TaskGraph g = compute_beside(10e-3, gather(0));
  SimOptions o = at(Fidelity::Full);
  SimResult r = simulate(g, cluster(1), o);
  const double comm_end = 1.25 * (2e-6 + 2e8 / 100e9);
  CHECK(r.devices[0].busy_s(Stream::DpGather) == Approx(comm_end).epsilon(1e-9));
  CHECK(r.step_time_s == Approx(comm_end + (10e-3 - comm_end / 1.5)).epsilon(1e-9));
  CHECK(r.activities == 2);
}

// A ring-step flow that outlasts the compute beside it: the compute of 1 ms runs at 1 / 1.5 while the flow is in
// flight and ends at 1.5 ms; the flow ends at 2.002 ms having run 1.5 ms beside it, so it owes 1.5 x (1 - 1 / 1.25)
// = 0.3 ms, run alone: 2.302 ms, what the exact delay takes at analytic fidelity (the case above it).
TEST_CASE("Interference: a ring-step flow that outlasts the compute is slowed only while they overlap") {
  TaskGraph g = compute_beside(1e-3, gather(0));
  SimResult r = simulate(g, cluster(1), at(Fidelity::Full));
  CHECK(r.devices[0].busy_s(Stream::Compute) == Approx(1.5e-3).epsilon(1e-9));
  CHECK(r.step_time_s == Approx(2e-6 + 2e8 / 100e9 + 1.5e-3 * (1 - 1 / 1.25)).epsilon(1e-9));
}

// Nothing overlaps when the all-gather waits for the compute: the step is their sum, untouched.
TEST_CASE("Interference: compute and a collective one after the other cost their times alone") {
  TaskGraph g = test::empty_graph(2);
  int group = g.add_group({0, 1});
  TaskId a = g.add(Compute{TaskKind::Forward, 0, 1e-3, 0}, 0);
  TaskId b = g.add(Compute{TaskKind::Forward, 1, 1e-3, 0}, 0);
  TaskId c = g.add(gather(group), 0);
  g.depend(a, c);
  g.depend(b, c);
  SimResult r = simulate(g, cluster(1), at(Fidelity::Analytic));
  CHECK(r.step_time_s == Approx(1e-3 + gather_alone).epsilon(1e-9));
  CHECK(r.devices[0].interference_s == 0);
}

// Across nodes the profile measured nothing (inter_node off): a collective over NIC hops only (one GPU per node)
// overlaps for free; with factors given it does not.
TEST_CASE("Interference: across nodes only where the profile gives inter-node factors") {
  TaskGraph g = compute_beside(10e-3, gather(0));
  SimOptions o = at(Fidelity::Analytic);
  CHECK(simulate(g, cluster(2), o).step_time_s == Approx(10e-3).epsilon(1e-12));
}

TEST_CASE("Interference: inter-node factors apply to a collective across nodes") {
  TaskGraph g = compute_beside(10e-3, gather(0));
  SimOptions o = at(Fidelity::Analytic);
  SimResult r = simulate(g, cluster(2, true), o);
  // Route: NIC latency twice and the NIC bandwidth: alone 1 us + 2 ms; slowed 1.6x, compute 2x while overlapping.
  const double alone = 1e-6 + 2e8 / 100e9, comm_end = 1.6 * alone;
  CHECK(r.step_time_s == Approx(comm_end + (10e-3 - comm_end / 2.0)).epsilon(1e-9));
}

// Two nodes of two GPUs: a ring over all four takes n - N = 2 of its 4 hops over NVLink, so half its transfer runs
// where the intra-node factors were measured and half over the NICs (off here). The compute beside it runs
// 1 + (1.5 - 1) x 0.5 = 1.25 times slower; the collective is paced by its NIC hops (factor 1), so it takes its time
// alone, T: 3 steps of 1e8 bytes on the ring's slowest hop, 2 us (the NVLink hop's two links) + 1e8 / 100 GB/s
// = 3.006 ms. The compute ends at T + (10 ms - T / 1.25).
static SimResult spanning_run(bool inter, CollectiveOp op, double nic_bw = 100e9, double compute_s = 10e-3) {
  ClusterSpec c = cluster(2, inter);
  c.gpus_per_node = 2;
  c.nic_bw_Bps = nic_bw;
  TaskGraph g;
  g.devices = 4;
  g.resident.assign(4, {0, 0, 0, 0});
  Collective col = gather(g.add_group({0, 1, 2, 3}));
  col.op = op;
  if (op == CollectiveOp::AllToAll) {  // a dispatch of 100 tokens of 1,000 elements from each member to each other
    col.elems = 1000;
    col.split = static_cast<int>(g.a2a_tokens.size());
    g.a2a_tokens.push_back({100, 100, 100, 100});
  }
  for (int x = 0; x < 4; ++x) g.add(Compute{TaskKind::Forward, x, compute_s, 0}, 0);
  g.add(col, 0);
  return simulate(g, c, at(Fidelity::Analytic));
}

static const double spanning_alone = 3 * (2e-6 + 1e8 / 100e9);

TEST_CASE("Interference: a ring spanning nodes slows compute by its NVLink share of the intra-node factor") {
  SimResult r = spanning_run(false, CollectiveOp::AllGather);
  CHECK(r.devices[0].busy_s(Stream::DpGather) == Approx(spanning_alone).epsilon(1e-9));
  CHECK(r.step_time_s == Approx(spanning_alone + (10e-3 - spanning_alone / 1.25)).epsilon(1e-9));
  REQUIRE(r.spanning_interference.size() == 1);
  CHECK(r.spanning_interference[0].nvlink_share == 0.5);
  CHECK(r.spanning_interference[0].pace == 1);  // the NIC as fast as NVLink
  CHECK(r.spanning_interference[0].compute_slowdown == 1.25);
  CHECK(r.spanning_interference[0].comm_slowdown == 1);
}

// The same ring with its node's one NIC at 25 GB/s: the ring leaves each node through the NIC of its two members
// (2 x 1 / 2 = one NIC), so it runs at 25 of NVLink's 100 GB/s, pace 0.25, and its NVLink hops stream the bytes
// through HBM at a quarter of the rate the factor was measured at: compute 1 + (1.5 - 1) x 0.5 x 0.25 = 1.0625.
// Alone the ring takes 3 steps of the ring's largest hop latency, 2 us (the NVLink hop's two links), and 1e8 bytes on
// its slowest hop, 1e8 / 25 GB/s: T = 3 x 4.002 ms = 12.006 ms; the 20 ms of compute end at T + (20 ms - T / 1.0625).
// Before the pace (x1.25 throughout) they ended at T + (20 ms - T / 1.25), 1.7 ms later: a slower network made the GPU
// compute slower.
TEST_CASE("Interference: a ring its NICs hold below NVLink's bandwidth slows compute at its pace") {
  SimResult r = spanning_run(false, CollectiveOp::AllGather, 25e9, 20e-3);
  const double alone = 3 * (2e-6 + 1e8 / 25e9);
  CHECK(r.devices[0].busy_s(Stream::DpGather) == Approx(alone).epsilon(1e-9));
  REQUIRE(r.spanning_interference.size() == 1);
  CHECK(r.spanning_interference[0].nvlink_share == 0.5);
  CHECK(r.spanning_interference[0].pace == 0.25);
  CHECK(r.spanning_interference[0].compute_slowdown == 1.0625);
  CHECK(r.step_time_s == Approx(alone + (20e-3 - alone / 1.0625)).epsilon(1e-9));
}

// With NIC factors {2.0, 1.6} given, the compute takes both shares, 1 + 0.5 x 0.5 + 1.0 x 0.5 = 1.75, and the
// collective the NICs' 1.6: it ends at 1.6 T, the compute at 1.6 T + (10 ms - 1.6 T / 1.75).
TEST_CASE("Interference: a ring spanning nodes with NIC factors given takes both fabrics' shares") {
  SimResult r = spanning_run(true, CollectiveOp::AllGather);
  REQUIRE(r.spanning_interference.size() == 1);
  CHECK(r.spanning_interference[0].compute_slowdown == 1.75);
  CHECK(r.spanning_interference[0].comm_slowdown == 1.6);
  CHECK(r.step_time_s == Approx(1.6 * spanning_alone + (10e-3 - 1.6 * spanning_alone / 1.75)).epsilon(1e-9));
}

// An all-to-all sends each member's one node peer of its three over NVLink: share 1/3. The other 2/3 leave through
// the node's one NIC, shared by its two members: 50 GB/s each, so the NIC bytes take (2/3) B / 50 GB/s while the
// NVLink bytes would need (1/3) B / 100 GB/s, a quarter of that; they stream at a quarter of NVLink's rate, which is
// the share's rate (1/3 of NVLink's) times pace 0.75 = 50 / ((1 - 1/3) x 100). Compute 1 + 0.5 x 1/3 x 0.75 = 1.125.
// With a NIC of 400 GB/s (200 per member) the NVLink bytes hold the all-to-all (pace capped at 1): 1 + 0.5 / 3.
TEST_CASE("Interference: an all-to-all spanning nodes takes its node peers' share at its NICs' pace") {
  SimResult r = spanning_run(false, CollectiveOp::AllToAll);
  REQUIRE(r.spanning_interference.size() == 1);
  CHECK(r.spanning_interference[0].alltoall);
  CHECK(r.spanning_interference[0].nvlink_share == Approx(1.0 / 3));
  CHECK(r.spanning_interference[0].pace == Approx(0.75));
  CHECK(r.spanning_interference[0].compute_slowdown == Approx(1.125));
}

TEST_CASE("Interference: an all-to-all its NVLink bytes hold runs at NVLink's pace") {
  SimResult fast = spanning_run(false, CollectiveOp::AllToAll, 400e9);
  REQUIRE(fast.spanning_interference.size() == 1);
  CHECK(fast.spanning_interference[0].pace == 1);
  CHECK(fast.spanning_interference[0].compute_slowdown == Approx(1 + 0.5 / 3));
}

// TP collectives are left to overlap_penalty (fitted on per-layer times), so the interference model ignores them.
TEST_CASE("Interference: a TP collective beside compute is not slowed twice") {
  Collective c = gather(0);
  c.cls = CommClass::TpCollective;
  c.stream = Stream::TpComm;
  TaskGraph g = compute_beside(10e-3, c);
  SimOptions o = at(Fidelity::Analytic);
  CHECK(simulate(g, cluster(1), o).step_time_s == Approx(10e-3).epsilon(1e-12));
}

TEST_CASE("Interference: switched off by SimOptions, the overlap is free") {
  TaskGraph g = compute_beside(10e-3, gather(0));
  SimOptions o = at(Fidelity::Analytic);
  o.interference = false;
  CHECK(simulate(g, cluster(1), o).step_time_s == Approx(10e-3).epsilon(1e-12));
}

// A send beside compute on its sender: 1 GB at 100 GB/s over two links (2 us) = 10.002 ms alone; the sender computes
// for the whole transfer, so it takes 1.25 x that.
TEST_CASE("Interference: a pipeline send beside compute is slowed") {
  TaskGraph g = test::empty_graph(2);
  g.add(Compute{TaskKind::Forward, 0, 20e-3, 0}, 0);
  g.add(P2P{0, 1, 1e9}, 0);
  SimResult r = simulate(g, cluster(1), {});
  const double send = 1.25 * (2e-6 + 1e9 / 100e9);
  CHECK(r.devices[0].busy_s(Stream::PpSend) == Approx(send).epsilon(1e-6));
  CHECK(r.step_time_s == Approx(send + (20e-3 - send / 1.5)).epsilon(1e-6));
}

TEST_CASE("Interference: calibrate fits each factor as the geometric mean of overlapped / alone") {
  Json measured = Json::parse(R"({"accelerator": "h100-sxm", "interference": [
    {"kind": "compute", "alone_s": 1.0, "overlapped_s": 1.44},
    {"kind": "compute", "alone_s": 2.0, "overlapped_s": 2.5},
    {"kind": "comm", "fabric": "inter_node", "alone_s": 1.0, "overlapped_s": 1.1}]})");
  Calibration c = calibrate(measured, ".");
  CHECK(c.accelerator.profile.intra_node_interference.compute_slowdown == Approx(std::sqrt(1.44 * 1.25)));
  CHECK(c.accelerator.profile.intra_node_interference.comm_slowdown == 1.124);  // the base's, not fitted
  CHECK(c.accelerator.profile.inter_node_interference.comm_slowdown == Approx(1.1));
  CHECK(c.residuals.size() == 3);
  // Only the factors with points are fitted: the base's intra-node comm factor is not listed.
  CHECK(c.fitted_parameters == std::vector<std::string>{"inter_node.comm_slowdown", "intra_node.compute_slowdown"});
  Json big = Json::parse(R"({"accelerator": "h100-sxm", "interference": [
    {"kind": "compute", "fabric": "inter_node", "alone_s": 1, "overlapped_s": 5}]})");
  CHECK_THROWS_WITH(calibrate(big, "."), Catch::Contains("inter_node compute points give a slowdown of 5") &&
                                             Catch::Contains("beyond the 4x"));
  Json bad =
      Json::parse(R"({"accelerator": "h200", "interference": [{"kind": "compute", "alone_s": 2, "overlapped_s": 1}]})");
  CHECK_THROWS_WITH(calibrate(bad, "."),
                    Catch::Contains("interference[0].overlapped_s") && Catch::Contains("must be >= alone_s"));
}

TEST_CASE("Interference: an accelerator's factors are parsed with their field named on error") {
  AcceleratorSpec a = parse_accelerator(
      Json::parse(
          R"({"preset": "h200", "interference": {"inter_node": {"compute_slowdown": 1.2, "comm_slowdown": 1}}})"),
      "cluster.accelerator");
  CHECK(a.profile.inter_node_interference.compute_slowdown == 1.2);
  CHECK(!a.profile.intra_node_interference.active());
  CHECK_THROWS_WITH(
      parse_accelerator(Json::parse(R"({"preset": "h100-sxm", "interference": {"intra_node": {"compute_slowdown": 0.8,
                                                                                              "comm_slowdown": 1}}})"),
                        "cluster.accelerator"),
      Catch::Contains("cluster.accelerator.interference.intra_node.compute_slowdown") && Catch::Contains("[1, 4]"));
  AcceleratorSpec off = parse_accelerator(Json::parse(R"({"preset": "h100-sxm", "interference": "off"})"), "a");
  CHECK(!off.profile.intra_node_interference.active());
  CHECK(accelerator_preset("h100-sxm", "a").profile.intra_node_interference.compute_slowdown == 1.35);
  CHECK(accelerator_preset("b200", "a").profile.intra_node_interference.active() == false);
}
