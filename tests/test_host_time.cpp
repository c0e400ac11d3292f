// training.host_time_per_microbatch and host_time_per_step: host time each GPU's compute waits for, as host tasks
// between a device's compute tasks. expand() is pure; the one simulation runs in its own process (ctest -R).
#include <catch2/catch.hpp>
#include <map>

#include "sim/backend/Simulator.hpp"
#include "strategies/expand/Expand.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;

namespace {

// 4 layers of h 512 over dp 2 x pp 2 (1F1B), 4 micro-batches of 1 per data rank.
Experiment pipeline(const std::string& training_extra) {
  return test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
      "training": {"global_batch": 8, "micro_batch": 1)" +
                          training_extra + R"(},
      "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 1, "pp": 2, "schedule": "1f1b"}})");
}

ClusterSpec four_gpus() {
  ClusterSpec c = test::nodes_of("h100-sxm", 1);
  c.gpus_per_node = 4;
  c.nics_per_node = 4;
  return c;
}

}  // namespace

TEST_CASE("Host time: a wait before each micro-batch's first forward and one at the step's start, on every device") {
  const Experiment e = pipeline(R"(, "host_time_per_microbatch": "10ms", "host_time_per_step": "0.1s")");
  CHECK(e.training.host_time_per_microbatch_s == Approx(0.01));
  CHECK(e.training.host_time_per_step_s == Approx(0.1));
  const TaskGraph g = expand(e, four_gpus());
  // Per device: the step's wait and one per micro-batch (4), each followed by the device's next compute task.
  std::map<int, int> step_waits, microbatch_waits;
  for (TaskId id = 0; id < g.size(); ++id) {
    const auto* h = std::get_if<HostCompute>(&g[id].body);
    if (h == nullptr) continue;
    REQUIRE(h->wait);
    CHECK(h->microbatch == -1);  // not an optimizer step of the pipeline's timeline
    (h->wait_microbatch < 0 ? step_waits : microbatch_waits)[h->device] += 1;
    CHECK(h->seconds == Approx(h->wait_microbatch < 0 ? 0.1 : 0.01));
    // What waits for it on its device: a micro-batch's wait is followed by that micro-batch's forward (and no other
    // compute task); the step's by micro-batch 0's wait (both stages' schedules start with its forward).
    int next = 0;
    for (auto [it, end] = boost::out_edges(id, g.graph); it != end; ++it) {
      const TaskBody& b = g[boost::target(*it, g.graph)].body;
      if (const auto* c = std::get_if<Compute>(&b); c != nullptr && c->device == h->device) {
        CHECK(h->wait_microbatch >= 0);
        CHECK(c->kind == TaskKind::Forward);
        CHECK(c->microbatch == h->wait_microbatch);
        ++next;
      }
      if (const auto* w = std::get_if<HostCompute>(&b); w != nullptr && w->device == h->device) {
        CHECK(h->wait_microbatch < 0);
        CHECK(w->wait_microbatch == 0);
        ++next;
      }
    }
    CHECK(next == 1);
    // After the device's previous task on its compute stream: a compute task, or for micro-batch 0 the step's wait
    // (the step's own wait comes first).
    int before = 0;
    for (auto [it, end] = boost::in_edges(id, g.graph); it != end; ++it) {
      const TaskBody& b = g[boost::source(*it, g.graph)].body;
      if (const auto* c = std::get_if<Compute>(&b); c != nullptr && c->device == h->device) ++before;
      if (const auto* p = std::get_if<HostCompute>(&b); p != nullptr && p->device == h->device) ++before;
    }
    CHECK(before == (h->wait_microbatch < 0 ? 0 : 1));
  }
  REQUIRE(step_waits.size() == 4);
  for (int x = 0; x < 4; ++x) {
    CHECK(step_waits[x] == 1);
    CHECK(microbatch_waits[x] == 4);
  }
  // Not given: no host task.
  const TaskGraph plain = expand(pipeline(""), four_gpus());
  for (TaskId id = 0; id < plain.size(); ++id) CHECK(!std::holds_alternative<HostCompute>(plain[id].body));
}

TEST_CASE("Host time: refused negative, implausible or without a unit, naming the field") {
  CHECK_THROWS_WITH(pipeline(R"(, "host_time_per_microbatch": "-5ms")"),
                    Catch::Contains("training.host_time_per_microbatch"));
  CHECK_THROWS_WITH(pipeline(R"(, "host_time_per_microbatch": "20s")"),
                    Catch::Contains("training.host_time_per_microbatch") && Catch::Contains("at most 10 s"));
  CHECK_THROWS_WITH(pipeline(R"(, "host_time_per_step": "2min")"), Catch::Contains("training.host_time_per_step"));
  CHECK_THROWS_WITH(pipeline(R"(, "host_time_per_step": "90s")"),
                    Catch::Contains("training.host_time_per_step") && Catch::Contains("at most 60 s"));
  const Json j = training_to_json(pipeline(R"(, "host_time_per_step": "150ms")").training);
  CHECK(j["host_time_per_step"].get<double>() == Approx(0.15));
  CHECK(!j.contains("host_time_per_microbatch"));
}

// One GPU, no communication: the step is its compute tasks back to back, the step's host time and one wait per
// micro-batch: sum of the compute tasks + 0.1 s + 4 x 10 ms.
TEST_CASE("Host time: one GPU's step is its compute plus the step's and every micro-batch's host time") {
  const Experiment e = test::experiment(
      R"({"model": {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000, "seq_len": 1024},
          "training": {"global_batch": 4, "micro_batch": 1, "host_time_per_microbatch": "10ms",
                       "host_time_per_step": "0.1s"},
          "strategy": {"preset": "dp", "dp": 1}})");
  ClusterSpec c = test::nodes_of("h100-sxm", 1);
  c.gpus_per_node = 1;
  c.nics_per_node = 1;
  const TaskGraph g = expand(e, c);
  double compute = 0;
  int waits = 0;
  for (TaskId id = 0; id < g.size(); ++id) {
    if (const auto* k = std::get_if<Compute>(&g[id].body)) compute += k->seconds;
    if (std::holds_alternative<HostCompute>(g[id].body)) ++waits;
    CHECK(!std::holds_alternative<Collective>(g[id].body));
  }
  REQUIRE(waits == 5);
  REQUIRE(compute > 0);
  const SimResult r = simulate(g, c, {});
  CHECK(r.step_time_s == Approx(compute + 0.1 + 4 * 0.01).epsilon(1e-9));
}
