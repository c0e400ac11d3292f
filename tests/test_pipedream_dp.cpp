// PipeDream and PipeDream-2BW across data-parallel replicas: each replica stashes its own weight versions and the
// replicas all-reduce a stage's gradients before each of its updates (Narayanan et al., SOSP 2019, section 3.2;
// PipeDream-2BW, ICML 2021, section 3.1). Numbers worked by hand in the comments.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/Helpers.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

// Four llama layers, hidden 256 (8 heads), ffn 512, vocab 1024, untied (PipeDream refuses tied copies across stages).
// A layer: attention 4 x 256 x 256 = 262144, SwiGLU 3 x 256 x 512 = 393216, two norms 512 -> 655872 elements.
// pp 4: one layer a stage; stage 0 also holds the embedding, stage 3 the head and the final norm.
std::string experiment(const std::string& schedule, int dp) {
  return R"({"model": {"family": "llama", "layers": 4, "hidden": 256, "heads": 8, "vocab": 1024, "seq_len": 256,
    "ffn": 512, "tied_embeddings": false},
    "training": {"global_batch": )" +
         std::to_string(8 * dp) + R"(, "micro_batch": 1},
    "strategy": {"preset": "dp", "dp": )" +
         std::to_string(dp) + R"(, "pp": 4, "schedule": ")" + schedule + R"("},
    "cluster": {"preset": "dgx-a100", "nodes": 1, "gpus_per_node": )" +
         std::to_string(4 * dp) + R"(, "nics_per_node": )" + std::to_string(4 * dp) + "}}";
}

std::vector<double> per_stage(const Json& list, const char* key) {
  std::vector<double> out;
  for (const Json& x : list) out.push_back(x[key].get<double>());
  return out;
}

}  // namespace

TEST_CASE("PipeDream across two replicas keeps the delays of one and all-reduces before every update") {
  const Json one = test::simulate_report(experiment("pipedream", 1));
  const Json two = test::simulate_report(experiment("pipedream", 2));
  // Staleness per stage is a property of the schedule, not of the replicas.
  CHECK(two["pipeline"]["staleness"]["per_stage"] == one["pipeline"]["staleness"]["per_stage"]);
  // Weight stashing: stage s's backward uses weights p - s - 1 = 3, 2, 1, 0 updates old in the steady state.
  CHECK(per_stage(two["pipeline"]["version_lag"]["per_stage"], "max") == std::vector<double>{3, 2, 1, 0});
  // Stage 1 all-reduces its layer's fp32 gradients over 2 replicas before each of its 8 updates: a ring sends
  // 2 (n - 1) / n = 1 times the buffer, 655872 x 4 B = 2623488 B, 8 times.
  CHECK(two["communication"]["per_stage"][1]["by_class"]["dp_grad_sync"].get<double>() == 8 * 2623488.0);
  CHECK(one["communication"]["by_class"]["dp_grad_sync"].get<double>() == 0);
  // The simulation moves exactly those bytes (every exact figure identical to the analysis).
  for (const Json& row : two["validation"]) {
    INFO(row["figure"].get<std::string>());
    CHECK(row["difference"].get<double>() == 0);
  }
  // The all-reduces sit between a backward and the update the next forward reads: the step grows.
  CHECK(two["simulation"]["step_time_s"].get<double>() > one["simulation"]["step_time_s"].get<double>());
}

TEST_CASE("PipeDream-2BW across two replicas all-reduces once per step") {
  const Json one = test::simulate_report(experiment("pipedream-2bw", 1));
  const Json two = test::simulate_report(experiment("pipedream-2bw", 2));
  CHECK(two["pipeline"]["staleness"]["per_stage"] == one["pipeline"]["staleness"]["per_stage"]);
  // One update per step of 8 micro-batches: one all-reduce of stage 1's 2623488 B.
  CHECK(two["communication"]["per_stage"][1]["by_class"]["dp_grad_sync"].get<double>() == 2623488.0);
  for (const Json& row : two["validation"]) {
    INFO(row["figure"].get<std::string>());
    CHECK(row["difference"].get<double>() == 0);
  }
}

TEST_CASE("PipeDream across replicas refuses sharded states naming the state and the axis") {
  std::ofstream("/tmp/placesim-pipedream-dp-zero1.json")
      << experiment("pipedream", 2).replace(experiment("pipedream", 2).find("\"dp\","), 5, "\"zero1\",");
  std::string out;
  CHECK(run_placesim("simulate /tmp/placesim-pipedream-dp-zero1.json", &out) != 0);
  CHECK_THAT(out, Catch::Contains("strategy.schedule=pipedream with optimizer=sharded along dp_shard"));
}
