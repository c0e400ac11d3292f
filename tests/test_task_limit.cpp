// A step too large to simulate in reasonable time is refused before anything is expanded, with
// the estimate in the message, unless --force.
#include <catch2/catch.hpp>

#include "sim/backend/Simulate.hpp"
#include "sim/backend/Simulator.hpp"
#include "strategies/analytic/ExperimentFile.hpp"
#include "strategies/expand/Expand.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

// examples/small-3d-1f1b.json: 10 layers on pp 4, 32 samples on dp 2 in micro-batches of 1 (16 per pipeline).
const std::string kSmall3d = std::string(PLACESIM_SOURCE_DIR) + "/examples/small-3d-1f1b.json";

}  // namespace

TEST_CASE("the compute-task estimate: devices x micro-batches x chunks x passes x layer groups", "[task-limit]") {
  Experiment e = load_experiment(kSmall3d);
  // The 4 devices of a stage x 16 micro-batches x 3 passes (megatron-3d recomputes) = 192 per layer group of a
  // stage; the stages hold 2, 3, 3, 2 layers, one layer per group: 10 groups, 1920 tasks.
  CHECK(estimated_compute_tasks(e, {}) == 1920);
  ExpandOptions two;
  two.layer_group = 2;  // groups of 2 layers: 1 + 2 + 2 + 1
  CHECK(estimated_compute_tasks(e, two) == 1152);
}

TEST_CASE("simulate refuses a million GPUs before expanding, with the estimate in the message", "[task-limit]") {
  Experiment e = load_experiment(kSmall3d);
  e.strategy.dp = 125000;  // x tp 2 x pp 4 = 1,000,000 GPUs
  // 250,000 devices per stage x 16 micro-batches x 3 passes = 1.2e7 per layer group of a stage, over the budget:
  // groups of 2 layers, 1 + 2 + 2 + 1 of them.
  CHECK(estimated_compute_tasks(e, {}) == 7.2e7);
  std::string out;
  const std::string args = "simulate " + kSmall3d +
                           " --set cluster.nodes=125000 --set strategy.dp=125000 --set training.global_batch=2000000"
                           " --symmetry off";  // folded, it is 8 devices' work
  REQUIRE(run_placesim(args, &out) == 2);
  CHECK(out.find("about 7.2e+07 compute tasks") != std::string::npos);
  CHECK(out.find("--force") != std::string::npos);
}

// The estimate counted from the graph before simulating. Its timers are the simulation's exactly
// (compute tasks and exact collectives: small-3d's collectives all stay inside a node or are latency-bound), and a
// trace of every device holds one event per recorded task and device.
TEST_CASE("The simulation estimate counts the timers and trace events the run then has", "[task-limit]") {
  const SimulationInput in = resolve_simulation(load_experiment(kSmall3d));
  const TaskGraph g = expand(in.experiment, simulated_network(in.cluster), {});
  SimOptions o;  // every device recorded
  const SimulationEstimate est = estimate_simulation(g, simulated_network(in.cluster), o, true);
  const SimResult r = simulate(g, simulated_network(in.cluster), o);
  CHECK(est.tasks == static_cast<double>(g.size()));
  CHECK(est.timers == static_cast<double>(r.timers));
  CHECK(est.flows <= static_cast<double>(r.activities));  // a hop over two channels is two flows, counted once
  CHECK(static_cast<double>(r.activities) <= 2 * est.flows);
  CHECK(est.trace_bytes == 400.0 * static_cast<double>(r.record.tasks.size()));
  CHECK(est.seconds == est.flows * 20e-6 + est.timers * 2e-6);
  CHECK(est.memory_bytes == 60e6 + 1500.0 * est.tasks);
  CHECK(est.longest_compute_s > 0);
  CHECK(est.longest_compute_s <= 1.0);  // a 10-layer model with hidden 512: milliseconds
}

// With --trace-detail fine a decomposed collective records each ring step, an exact one still one record a member.
TEST_CASE("The trace estimate at fine detail counts the records the run then has", "[task-limit]") {
  const SimulationInput in = resolve_simulation(load_experiment(kSmall3d));
  const TaskGraph g = expand(in.experiment, simulated_network(in.cluster), {});
  SimOptions o;
  o.fine = true;
  const SimulationEstimate est = estimate_simulation(g, simulated_network(in.cluster), o, true);
  const SimResult r = simulate(g, simulated_network(in.cluster), o);
  CHECK(est.trace_bytes == 400.0 * static_cast<double>(r.record.tasks.size()));
}
