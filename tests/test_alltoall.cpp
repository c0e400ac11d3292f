// Expert parallelism's all-to-all in the simulator, hand-computed on tiny clusters (raw link figures, comm_model
// "links"): decomposed into one flow per ordered pair, all at once (full fidelity; flow fidelity across nodes), or
// one exact delay (analytic fidelity; flow fidelity inside a node). Each TEST_CASE that simulates runs in its own
// process (ctest).
#include <catch2/catch.hpp>
#include <stdexcept>

#include "sim/backend/Simulator.hpp"
#include "sim/backend/TaskNames.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "tests/SimFixtures.hpp"

using namespace placesim;

namespace {

// One node of 4 GPUs on an NVSwitch (tests/SimFixtures.hpp): 100 GB/s and 1 us per NVLink direction; a route GPU ->
// GPU crosses the sender's link up and the receiver's down, 2 us.
ClusterSpec one_node() {
  ClusterSpec c = test::links_node(4);
  c.nics_per_node = 1;
  c.accelerator.profile.inter_node_interference = {};
  return c;
}

// Two nodes of 2 GPUs (gpu0, gpu1 | gpu2, gpu3), `nics` NICs per node of 10 GB/s, fat-tree with every NIC under one
// leaf: a route across nodes is NIC up (2 us + half the switch's 1 us) and NIC down, 5 us.
ClusterSpec two_nodes(int nics) {
  ClusterSpec c = one_node();
  c.nodes = 2;
  c.gpus_per_node = 2;
  c.nics_per_node = nics;
  c.nic_bw_Bps = 10e9;
  c.nic_latency_s = 2e-6;
  c.switch_latency_s = 1e-6;
  return c;
}

const double nvlink_route = 2e-6, nic_route = 5e-6;

using test::empty_graph;

// An all-to-all over `members` routed by `tokens`, tokens of `elems` 2-byte elements (2 MB by default); its group and
// routing are added to `g`.
Collective alltoall(TaskGraph& g, const std::vector<int>& members, const std::vector<std::int64_t>& tokens,
                    bool combine, std::int64_t elems = 1000000) {
  Collective c;
  c.op = CollectiveOp::AllToAll;
  c.cls = CommClass::EpAllToAll;
  c.stream = Stream::EpComm;
  c.group = g.add_group(members);
  c.elems = elems;
  c.elem_bytes = 2;
  c.split = static_cast<int>(g.a2a_tokens.size());
  c.combine = combine;
  g.a2a_tokens.push_back(tokens);
  return c;
}

TaskId add_alltoall(TaskGraph& g, const std::vector<int>& members, const std::vector<std::int64_t>& tokens,
                    bool combine, std::int64_t elems = 1000000) {
  return g.add(alltoall(g, members, tokens, combine, elems), 0);
}

SimOptions at(Fidelity fidelity) {
  SimOptions o;
  o.fidelity = fidelity;
  return o;
}

double sent(const SimResult& r, int device) {
  return r.devices[static_cast<std::size_t>(device)].bytes_sent[static_cast<std::size_t>(CommClass::EpAllToAll)];
}

// Dispatch routed {3, 1, 2, 2}: every member sends member j tokens[j] tokens of 2 MB, none to itself. gpu0 sends
// (1 + 2 + 2) x 2 MB = 10 MB, gpu1 (3 + 2 + 2) x 2 = 14 MB, gpu2 and gpu3 (3 + 1 + 2) x 2 = 12 MB. gpu0 receives 3
// tokens from each of 3 peers, 18 MB: its link down is the most loaded, 18 MB / 100 GB/s = 180 us, plus the route's
// 2 us: 182 us. (Self pairs sent would load it with 24 MB; flows one after another would take the 48 MB's sum.)
const std::vector<std::int64_t> uneven = {3, 1, 2, 2};
const std::vector<double> uneven_sent = {10e6, 14e6, 12e6, 12e6};
const double uneven_in_node = nvlink_route + 18e6 / 100e9;

void check_uneven_bytes(const TaskGraph& g, TaskId id, const SimResult& r) {
  for (int x = 0; x < 4; ++x) {
    CHECK(sent(r, x) == uneven_sent[static_cast<std::size_t>(x)]);
    CHECK(sent(r, x) == task_bytes_sent(g, g[id], x));  // simulated bytes == analytic bytes, exactly
    CHECK(r.devices[static_cast<std::size_t>(x)].bytes_sent[static_cast<std::size_t>(CommClass::DpGradSync)] == 0);
  }
}

// One all-to-all over the four GPUs routed by `tokens` (a combine when `combine`, else a dispatch), simulated alone.
struct AllToAllRun {
  TaskGraph g;
  TaskId id;
  SimResult r;
};

AllToAllRun run_alltoall(const std::vector<std::int64_t>& tokens, bool combine, const ClusterSpec& c, Fidelity f) {
  AllToAllRun run{empty_graph(4), 0, {}};
  run.id = add_alltoall(run.g, {0, 1, 2, 3}, tokens, combine);
  run.r = simulate(run.g, c, at(f));
  return run;
}

// The four-member all-to-all decomposed into flows: one per ordered pair, none to itself (12), the last ending at
// `step_s`.
void check_flows(const SimResult& r, double step_s) {
  CHECK(r.step_time_s == Approx(step_s).epsilon(1e-9));
  CHECK(r.activities == 12);
}

// The all-to-all as one exact delay: a single timer of `step_s`.
void check_exact_delay(const SimResult& r, double step_s) {
  CHECK(r.step_time_s == Approx(step_s).epsilon(1e-12));
  CHECK(r.timers == 1);
}

}  // namespace

TEST_CASE("All-to-all in one node as concurrent flows: the busiest NVLink port's load") {
  const auto [g, id, r] = run_alltoall(uneven, false, one_node(), Fidelity::Full);
  check_flows(r, uneven_in_node);  // 182 us
  check_uneven_bytes(g, id, r);
  for (int x = 0; x < 4; ++x)  // every member busy from the start to the last flow's end
    CHECK(r.devices[static_cast<std::size_t>(x)].busy_s(Stream::EpComm) == Approx(uneven_in_node).epsilon(1e-9));
}

TEST_CASE("All-to-all in one node as one exact delay takes the same time") {
  const auto [g, id, r] = run_alltoall(uneven, false, one_node(), Fidelity::Analytic);
  check_exact_delay(r, uneven_in_node);
  CHECK(r.activities == 0);
  check_uneven_bytes(g, id, r);
}

TEST_CASE("All-to-all in one node at flow fidelity is an exact delay") {
  const SimResult r = run_alltoall(uneven, false, one_node(), Fidelity::Flow).r;
  check_exact_delay(r, uneven_in_node);
  CHECK(r.activities == 0);
}

namespace {

// The same dispatch over two nodes of two GPUs, a NIC per GPU. gpu0 receives 3 tokens from each of gpu2 and gpu3 over
// its NIC: 12 MB / 10 GB/s = 1.2 ms, plus the 5 us route: 1.205 ms. Its NVLink receives only gpu1's 6 MB (62 us), and
// no NIC sends more than 8 MB (two peers' 2 + 2 tokens).
const double uneven_across = nic_route + 12e6 / 10e9;

// The all-to-all routed by `tokens` over two nodes, a NIC per GPU, at fidelity Flow (as flows) or Analytic (as one
// exact delay): it ends at `step_s` either way.
AllToAllRun across_nodes(const std::vector<std::int64_t>& tokens, bool combine, Fidelity f, double step_s) {
  AllToAllRun run = run_alltoall(tokens, combine, two_nodes(2), f);
  if (f == Fidelity::Analytic)
    check_exact_delay(run.r, step_s);
  else
    check_flows(run.r, step_s);
  return run;
}

}  // namespace

TEST_CASE("All-to-all across nodes as concurrent flows: the busiest NIC's load") {
  const auto [g, id, r] = across_nodes(uneven, false, Fidelity::Flow, uneven_across);
  check_uneven_bytes(g, id, r);
}

TEST_CASE("All-to-all across nodes as one exact delay takes the same time and shares no NIC alone") {
  const auto [g, id, r] = across_nodes(uneven, false, Fidelity::Analytic, uneven_across);
  CHECK(r.nic_overlap_s == 0);
  check_uneven_bytes(g, id, r);
}

namespace {

// With NVLink at 1 GB/s the same dispatch is bound inside the nodes: gpu0's link down receives gpu1's 3 tokens, 6 MB /
// 1 GB/s = 6 ms, after the NVLink route's 2 us (not the NIC route's 5 us: the two fabrics share no link).
SimResult nvlink_bound(Fidelity fidelity) {
  TaskGraph g = empty_graph(4);
  add_alltoall(g, {0, 1, 2, 3}, uneven, false);
  ClusterSpec c = two_nodes(2);
  c.nvlink_bw_Bps = 1e9;
  return simulate(g, c, at(fidelity));
}

const double nvlink_bound_s = nvlink_route + 6e6 / 1e9;

}  // namespace

TEST_CASE("All-to-all across nodes bound by NVLink pays the NVLink route's latency (flows)") {
  CHECK(nvlink_bound(Fidelity::Flow).step_time_s == Approx(nvlink_bound_s).epsilon(1e-9));
}

TEST_CASE("All-to-all across nodes bound by NVLink pays the NVLink route's latency (exact delay)") {
  CHECK(nvlink_bound(Fidelity::Analytic).step_time_s == Approx(nvlink_bound_s).epsilon(1e-12));
}

namespace {

// A combine returns the tokens: member i sends tokens[i] to every peer. Routed {5, 1, 1, 1}, the hot gpu0 sends
// 3 x 5 x 2 MB = 30 MB, the others 3 x 2 MB = 6 MB each (a dispatch of the same routing: gpu0 6 MB, the others
// 14 MB). Across two nodes gpu0's NIC sends 2 x 10 MB: 2 ms + 5 us.
const std::vector<std::int64_t> hot = {5, 1, 1, 1};
const double hot_across = nic_route + 20e6 / 10e9;

void check_hot_bytes(const TaskGraph& g, TaskId id, const SimResult& r) {
  CHECK(sent(r, 0) == 30e6);
  for (int x = 1; x < 4; ++x) CHECK(sent(r, x) == 6e6);
  for (int x = 0; x < 4; ++x) CHECK(sent(r, x) == task_bytes_sent(g, g[id], x));
}

}  // namespace

TEST_CASE("All-to-all combine: the hot member sends most, its NIC bounds the time (flows)") {
  const auto [g, id, r] = across_nodes(hot, true, Fidelity::Flow, hot_across);
  check_hot_bytes(g, id, r);
}

TEST_CASE("All-to-all combine: the hot member sends most, its NIC bounds the time (exact delay)") {
  const auto [g, id, r] = across_nodes(hot, true, Fidelity::Analytic, hot_across);
  check_hot_bytes(g, id, r);
}

namespace {

// Contention: two nodes of two GPUs sharing one NIC per node. All-to-alls over {gpu0, gpu2} and {gpu1, gpu3}, one
// token of 10 MB each way: alone, each direction of the NICs carries one 10 MB flow, 1 ms + 5 us; together, two, so
// both take 1 ms longer (the other's 10 MB over the 10 GB/s NIC).
SimResult pairs_on_shared_nics(bool both, Fidelity fidelity) {
  TaskGraph g = empty_graph(4);
  add_alltoall(g, {0, 2}, {1, 1}, false, 5000000);
  if (both) add_alltoall(g, {1, 3}, {1, 1}, false, 5000000);
  return simulate(g, two_nodes(1), at(fidelity));
}

const double pair_alone = nic_route + 10e6 / 10e9;

}  // namespace

TEST_CASE("All-to-all contention: alone on the shared NICs") {
  const SimResult r = pairs_on_shared_nics(false, Fidelity::Flow);
  CHECK(r.step_time_s == Approx(pair_alone).epsilon(1e-9));  // 1.005 ms
  CHECK(r.activities == 2);
}

TEST_CASE("All-to-all contention: two over disjoint groups share the NICs and each takes the other's bytes longer") {
  const SimResult r = pairs_on_shared_nics(true, Fidelity::Flow);
  CHECK(r.step_time_s == Approx(pair_alone + 10e6 / 10e9).epsilon(1e-9));  // 2.005 ms
  for (int x = 0; x < 4; ++x)
    CHECK(r.devices[static_cast<std::size_t>(x)].busy_s(Stream::EpComm) == Approx(2.005e-3).epsilon(1e-9));
}

// The analytic fidelity gives each inter-node all-to-all on a NIC an equal share of it (latency stretched too), and
// counts the overlap it did not simulate.
TEST_CASE("All-to-all contention: analytic fidelity shares the NICs between all-to-alls") {
  const SimResult r = pairs_on_shared_nics(true, Fidelity::Analytic);
  CHECK(r.step_time_s == Approx(2 * pair_alone).epsilon(1e-9));  // 2.01 ms
  CHECK(r.nic_overlap_s == Approx(pair_alone).epsilon(1e-9));
  CHECK(r.nic_overlap_node == 0);
}

// One all-to-all beside a pipeline send on the same NIC: gpu1 -> gpu3's 10 MB shares gpu0 -> gpu2's NIC links, so
// both take 2.005 ms; gpu2 -> gpu0 goes the other way alone (1.005 ms); the all-to-all ends with its last flow.
TEST_CASE("All-to-all contention: a send on the same NIC delays its flow") {
  TaskGraph g = empty_graph(4);
  const TaskId id = add_alltoall(g, {0, 2}, {1, 1}, false, 5000000);
  g.add(P2P{1, 3, 10e6}, 0);
  const SimResult r = simulate(g, two_nodes(1), at(Fidelity::Flow));
  CHECK(r.step_time_s == Approx(pair_alone + 10e6 / 10e9).epsilon(1e-9));
  CHECK(r.devices[2].busy_s(Stream::EpComm) == Approx(pair_alone + 10e6 / 10e9).epsilon(1e-9));
  CHECK(sent(r, 0) == task_bytes_sent(g, g[id], 0));
  CHECK(sent(r, 0) == 10e6);
}

// Repeated all-to-alls (Collective::repeat) run back to back: round after round, each ended by its last flow; fine
// detail records one slice per member and round, not per flow (a member's flows overlap on its stream).
TEST_CASE("All-to-all repeated: rounds one after another, a record per member and round") {
  TaskGraph g = empty_graph(4);
  Collective c = alltoall(g, {0, 1, 2, 3}, uneven, false);
  c.repeat = 2;
  const TaskId id = g.add(c, 0);
  SimOptions o = at(Fidelity::Full);
  o.fine = true;
  const SimResult r = simulate(g, one_node(), o);
  CHECK(r.step_time_s == Approx(2 * uneven_in_node).epsilon(1e-9));
  CHECK(r.activities == 24);
  CHECK(sent(r, 1) == 2 * 14e6);
  CHECK(sent(r, 1) == task_bytes_sent(g, g[id], 1));
  REQUIRE(r.record.tasks.size() == 8);
  for (const TaskRecord& t : r.record.tasks) {
    CHECK(t.step == (t.start_s > 0 ? 1 : 0));
    CHECK(t.end_s - t.start_s == Approx(uneven_in_node).epsilon(1e-9));
    CHECK(t.bytes == uneven_sent[static_cast<std::size_t>(t.device)]);
    CHECK(t.peer == -1);
    CHECK(t.algorithm == "direct");
    CHECK(t.stream == Stream::EpComm);
  }
}

TEST_CASE("All-to-all repeated as an exact delay: the rounds' sum") {
  TaskGraph g = empty_graph(4);
  Collective c = alltoall(g, {0, 1, 2, 3}, uneven, false);
  c.repeat = 2;
  g.add(c, 0);
  const SimResult r = simulate(g, one_node(), at(Fidelity::Analytic));
  CHECK(r.step_time_s == Approx(2 * uneven_in_node).epsilon(1e-12));
  CHECK(r.record.tasks.size() == 4);
}

TEST_CASE("All-to-all whose members keep all their tokens moves nothing and takes no time") {
  TaskGraph g = empty_graph(4);
  const TaskId id = add_alltoall(g, {0, 1}, {0, 0}, false);
  const TaskId after = g.add(Compute{TaskKind::Forward, 0, 1e-3, 0}, 0);
  g.depend(id, after);
  const SimResult r = simulate(g, one_node(), at(Fidelity::Full));
  CHECK(r.step_time_s == Approx(1e-3).epsilon(1e-12));
  CHECK(r.activities == 0);
  CHECK(sent(r, 0) == 0);
}

namespace {

// Overlap interference, as for data-parallel collectives: 2 GPUs slowing compute 1.5x and transfers 1.25x while they
// overlap. Dispatch routed {1, 2} of 200 MB tokens: gpu0 -> gpu1 carries 400 MB, gpu1 -> gpu0 200 MB. gpu1 computes
// for 10 ms from the start.
ClusterSpec interfering() {
  ClusterSpec c = one_node();
  c.gpus_per_node = 2;
  c.accelerator.profile.intra_node_interference = {1.5, 1.25};
  return c;
}

TaskGraph compute_beside_dispatch() {
  TaskGraph g = empty_graph(2);
  g.add(Compute{TaskKind::Forward, 1, 10e-3, 0}, 0);
  add_alltoall(g, {0, 1}, {1, 2}, false, 100000000);
  return g;
}

}  // namespace

// Flows are slowed by their own sender's compute while they flow: gpu1's 200 MB (2.002 ms, all of it beside gpu1's
// compute) take 1.25x, 2.5025 ms; gpu0's 400 MB are not slowed (4.002 ms, the end). The compute runs at 1/1.5 until
// then.
TEST_CASE("All-to-all interference: each flow slowed by its sender's compute") {
  const SimResult r = simulate(compute_beside_dispatch(), interfering(), at(Fidelity::Full));
  const double end = nvlink_route + 4e8 / 100e9;
  CHECK(r.devices[1].busy_s(Stream::EpComm) == Approx(end).epsilon(1e-9));
  CHECK(r.step_time_s == Approx(end + (10e-3 - end / 1.5)).epsilon(1e-9));
}

// The exact delay (4.002 ms) runs at 1/1.25 while a member computes: 5.0025 ms.
TEST_CASE("All-to-all interference: the exact delay slowed while a member computes") {
  const SimResult r = simulate(compute_beside_dispatch(), interfering(), at(Fidelity::Analytic));
  const double end = 1.25 * (nvlink_route + 4e8 / 100e9);
  CHECK(r.devices[0].busy_s(Stream::EpComm) == Approx(end).epsilon(1e-9));
  CHECK(r.step_time_s == Approx(end + (10e-3 - end / 1.5)).epsilon(1e-9));
}

namespace {

// A folded step simulating lanes 0 and 1 of 4 (tp 1): gpu0 and gpu1 are block 0.
SimOptions folded() {
  SimOptions o = at(Fidelity::Full);
  o.folding.lanes = 4;
  o.folding.folded_lanes = 2;
  return o;
}

}  // namespace

TEST_CASE("All-to-all in a folded step: a group beyond the simulated blocks is refused") {
  TaskGraph g = empty_graph(4);
  add_alltoall(g, {0, 1, 2, 3}, uneven, false);
  CHECK_THROWS_AS(simulate(g, one_node(), folded()), std::runtime_error);
}

TEST_CASE("All-to-all in a folded step: the refusal names the device and the way out") {
  TaskGraph g = empty_graph(4);
  add_alltoall(g, {0, 1, 2, 3}, uneven, false);
  CHECK_THROWS_WITH(simulate(g, one_node(), folded()),
                    Catch::Contains("device 2 is outside the simulated blocks") && Catch::Contains("--symmetry off"));
}

// gpu0 -> gpu1 carries 2 tokens, 4 MB: 2 us + 40 us.
TEST_CASE("All-to-all in a folded step: a group inside block 0 runs as usual") {
  TaskGraph g = empty_graph(4);
  add_alltoall(g, {0, 1}, {1, 2}, false);
  const SimResult r = simulate(g, one_node(), folded());
  CHECK(r.step_time_s == Approx(nvlink_route + 4e6 / 100e9).epsilon(1e-9));
  CHECK(sent(r, 0) == 4e6);
  CHECK(sent(r, 1) == 2e6);
}

TEST_CASE("All-to-all names: direction, class, group, what the device sends; algorithm direct") {
  TaskGraph g = empty_graph(4);
  const TaskId dispatch = add_alltoall(g, {0, 1, 2, 3}, uneven, false);
  Collective c = alltoall(g, {0, 1, 2, 3}, hot, true);
  c.layer = 3;
  c.layers = 1;
  c.microbatch = 1;
  c.repeat = 2;
  const TaskId combine = g.add(c, 0);
  const TaskRecord d = describe_task(g, dispatch, 1);
  CHECK(d.name == "alltoall dispatch ep grp@gpu0 14.0 MB");
  CHECK(d.bytes == 14e6);
  CHECK(d.algorithm == "direct");
  CHECK(d.kind == TaskKind::Collective);
  CHECK(d.comm_class == CommClass::EpAllToAll);
  CHECK(d.stream == Stream::EpComm);
  const TaskRecord k = describe_task(g, combine, 0);
  CHECK(k.name == "alltoall combine ep grp@gpu0 L3 mb1 30.0 MB x2");
  CHECK(k.bytes == 60e6);
}

TEST_CASE("All-to-all with a routing that does not fit its group is refused, naming the task") {
  TaskGraph g = empty_graph(4);
  add_alltoall(g, {0, 1, 2}, uneven, false);
  CHECK_THROWS_WITH(simulate(g, one_node(), at(Fidelity::Full)),
                    Catch::Contains("all-to-all task 0") && Catch::Contains("4 token counts for 3 members"));
}
