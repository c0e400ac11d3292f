// Stragglers (cluster.slow): a GPU or a node computing at a fraction of the accelerator's speed, hand-computed on
// tiny task graphs: the slow member's compute takes its time / its speed and gates what waits for it, exactly as the
// graph's critical path says. Each TEST_CASE that simulates runs in its own process (ctest).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "sim/backend/Simulator.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "tests/Helpers.hpp"
#include "tests/SimFixtures.hpp"

using namespace placesim;

namespace {

using test::empty_graph;

// An 8-GPU experiment on one node (8 MoE layers, pp 2 x dp 4, ep 4).
const std::string kMoe = std::string(PLACESIM_SOURCE_DIR) + "/tests/golden/simulate-moe-dualpipev/moe-dualpipev.json";

// One node of 4 GPUs on an NVSwitch of raw links: 100 GB/s and 1 us per NVLink direction.
ClusterSpec node(double speed_of_gpu1, double sigma = 0) {
  ClusterSpec c = test::links_node(4);
  c.nics_per_node = 1;
  if (speed_of_gpu1 != 1) c.slow["gpu 1"] = speed_of_gpu1;
  c.speed_spread.sigma = sigma;
  return c;
}

// An FSDP unit's step on a ring of 4: each GPU computes 1 s, then the ring reduce-scatters the unit's gradients
// (8 MB): 3 steps of 1/4 of it, each 2 us of route latency plus 2 MB at 100 GB/s.
double fsdp_step(double speed_of_gpu1, double sigma = 0) {
  TaskGraph g = empty_graph(4);
  const int group = g.add_group({0, 1, 2, 3});
  Collective rs;
  rs.op = CollectiveOp::ReduceScatter;
  rs.group = group;
  rs.elems = 4'000'000;
  rs.elem_bytes = 2;
  const TaskId sync = g.add(rs, 0);
  for (int x = 0; x < 4; ++x) g.depend(g.add(Compute{TaskKind::Backward, x, 1.0, 0}, 0), sync);
  SimOptions full;
  full.fidelity = Fidelity::Full;
  return simulate(g, node(speed_of_gpu1, sigma), full).step_time_s;
}

// 1F1B on 2 stages (gpu 0, gpu 1) with 2 micro-batches, forward 1 s and backward 2 s, transfers left out: stage 0 runs
// F0 F1 B0 B1, stage 1 F0 B0 F1 B1.
double pipeline_step(double speed_of_gpu1) {
  TaskGraph g = empty_graph(4);
  auto op = [&](int stage, TaskKind kind, double seconds) { return g.add(Compute{kind, stage, seconds, 0}, stage); };
  const TaskId f00 = op(0, TaskKind::Forward, 1), f01 = op(0, TaskKind::Forward, 1);
  const TaskId b00 = op(0, TaskKind::Backward, 2), b01 = op(0, TaskKind::Backward, 2);
  const TaskId f10 = op(1, TaskKind::Forward, 1), b10 = op(1, TaskKind::Backward, 2);
  const TaskId f11 = op(1, TaskKind::Forward, 1), b11 = op(1, TaskKind::Backward, 2);
  for (auto [a, b] : {std::pair{f00, f01}, {f01, b00}, {b00, b01}, {f10, b10}, {b10, f11}, {f11, b11}}) g.depend(a, b);
  for (auto [a, b] : {std::pair{f00, f10}, {f01, f11}, {b10, b00}, {b11, b01}}) g.depend(a, b);
  return simulate(g, node(speed_of_gpu1), {}).step_time_s;
}

}  // namespace

// The ring waits for its slowest member: 1 s of compute, or 1 / 0.8 = 1.25 s with GPU 1 at 0.8x, then the same
// reduce-scatter.
const double kRing = 3 * (2e-6 + 2e6 / 100e9);

TEST_CASE("Stragglers: an FSDP reduce-scatter after 1 s of compute on every GPU") {
  CHECK(fsdp_step(1.0) == Approx(1.0 + kRing).epsilon(1e-9));
}

TEST_CASE("Stragglers: one GPU at 0.8x delays the FSDP reduce-scatter by its slower compute") {
  CHECK(fsdp_step(0.8) == Approx(1.25 + kRing).epsilon(1e-9));
}

// Stage 0: F0 [0, 1], F1 [1, 2]; stage 1: F0 [1, 2], B0 [2, 4], F1 [4, 5], B1 [5, 7]; stage 0: B0 [4, 6], B1 [7, 9].
TEST_CASE("Stragglers: 1F1B on 2 stages with 2 micro-batches, forward 1 s and backward 2 s") {
  CHECK(pipeline_step(1.0) == Approx(9.0).epsilon(1e-12));
}

// With stage 1 at 0.8x (F 1.25 s, B 2.5 s): stage 1 F0 [1, 2.25], B0 [2.25, 4.75], F1 [4.75, 6], B1 [6, 8.5]; stage 0
// B0 [4.75, 6.75], B1 [8.5, 10.5]: the step grows by 1.5 s, stage 1's four ops on the critical path.
TEST_CASE("Stragglers: a 1F1B stage at 0.8x lengthens the step by its share of the critical path") {
  CHECK(pipeline_step(0.8) == Approx(10.5).epsilon(1e-12));
}

TEST_CASE("Stragglers: cluster.slow names each bad entry at once") {
  std::string out;
  CHECK(test::run_placesim("check " + kMoe + " --set 'cluster.slow={\"gpu 9\":0.8,\"node 1\":2,\"x\":0.5}'", &out) !=
        0);
  for (const char* problem :
       {"cluster.slow.gpu 9: the cluster has 8 GPUs (0 to 7)", "cluster.slow.node 1: the cluster has 1 node (0 to 0)",
        "cluster.slow.node 1=2 must be a speed in (0, 1]", "cluster.slow.x: name a node or a GPU"})
    CHECK_THAT(out, Catch::Contains(problem));
}

// The report carries the stragglers and the step without them, simulated apart; the summary states the cost.
TEST_CASE("Stragglers: simulate reports the step with and without them") {
  std::string out;
  const std::string report = "/tmp/placesim-stragglers.json";
  REQUIRE(test::run_placesim("simulate " + kMoe + " --quiet --set 'cluster.slow={\"node 0\":0.5}' --report " + report,
                             &out) == 0);
  CHECK_THAT(out, Catch::Contains("stragglers           node 0 x0.5 (cluster.slow)"));
  std::ifstream in(report);
  const Json r = Json::parse(in);
  const Json& s = r["simulation"]["stragglers"];
  // Every GPU of the one node at half speed: every compute task takes twice as long, communication does not, so the
  // step grows by less than 2x and by more than nothing.
  const double with = r["simulation"]["step_time_s"].get<double>(), without = s["step_time_without_s"].get<double>();
  CHECK(with > without);
  CHECK(with < 2 * without);
  CHECK(s["cost_fraction"].get<double>() == Approx(with / without - 1).epsilon(1e-12));
}

// With both, the drawn speeds' slowest GPU is one cluster.slow does not name (speeds drawn as 1 - 0.01 |z| stay
// above 0.9 but for a 10-sigma draw; gpu 3's 0.5 is its own).
TEST_CASE("Stragglers: the slowest drawn GPU is not one cluster.slow names") {
  std::string out;
  const std::string report = "/tmp/placesim-stragglers-both.json";
  REQUIRE(test::run_placesim("simulate " + kMoe +
                                 " --quiet --set 'cluster.slow={\"gpu 3\":0.5}' "
                                 "--set 'cluster.speed_spread={\"sigma\":0.01,\"seed\":3}' --report " +
                                 report,
                             &out) == 0);
  std::ifstream in(report);
  const double slowest = Json::parse(in)["simulation"]["stragglers"]["speed_spread"]["slowest_speed"].get<double>();
  CHECK(slowest > 0.9);
  CHECK(slowest < 1);
  CHECK_THAT(out, !Catch::Contains("slowest GPU 3 "));
}

// Speeds drawn as 1 - sigma |z|, z standard normal: |z| is half-normal, of mean sqrt(2 / pi), so over 65,536 GPUs the
// mean slowdown is sigma sqrt(2 / pi) (its standard error sigma 0.6 / 256, well inside 1 %); the same seed draws the
// same speeds, another seed others; per node, a node's GPUs alike; a GPU cluster.slow names keeps its own.
TEST_CASE("Stragglers: speeds drawn from cluster.speed_spread are seeded half-normal slowdowns") {
  ClusterSpec c = parse_cluster(Json::parse(
      R"({"preset": "dgx-h100", "nodes": 8192, "speed_spread": {"sigma": 0.02, "seed": 7}, "slow": {"gpu 5": 0.7}})"));
  double slowdown = 0, least = 1;
  for (int x = 0; x < c.devices(); ++x) {
    if (x == 5) continue;
    slowdown += 1 - c.speed(x);
    least = std::min(least, c.speed(x));
  }
  CHECK(slowdown / (c.devices() - 1) == Approx(0.02 * std::sqrt(2 / M_PI)).epsilon(0.01));
  CHECK(least >= 0.5);
  CHECK(c.speed(5) == 0.7);
  ClusterSpec same = c, other = c, nodes = c;
  other.speed_spread.seed = 8;
  nodes.speed_spread.per_node = true;
  int differ = 0;
  for (int x = 0; x < 64; ++x) {
    CHECK(same.speed(x) == c.speed(x));
    differ += other.speed(x) != c.speed(x) ? 1 : 0;
    if (x != 5) CHECK(nodes.speed(x) == nodes.speed(x / 8 * 8));
  }
  CHECK(differ > 60);
}

// The ring waits for its slowest member, whatever drew it: 1 s / the least of the 4 GPUs' speeds, then the ring.
TEST_CASE("Stragglers: drawn speeds delay the FSDP reduce-scatter by the slowest GPU's compute") {
  const ClusterSpec c = node(1.0, 0.05);
  double least = 1;
  for (int x = 0; x < 4; ++x) least = std::min(least, c.speed(x));
  REQUIRE(least < 1);
  CHECK(fsdp_step(1.0, 0.05) == Approx(1.0 / least + kRing).epsilon(1e-9));
}
