// Mixed hardware (cluster.accelerators): pipeline stages costed on their own accelerator, a layer split that
// balances them, data-parallel groups across generations gated by the slower GPUs, each stage's memory against its
// own GPUs. Each TEST_CASE that simulates does so in child processes (run_placesim).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "sim/backend/Generations.hpp"
#include "strategies/analytic/Costs.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

// GPT 1.7B (24 layers) on two DGX nodes as pp 2 x tp 8, 1F1B: stage 0 on node 0, stage 1 on node 1.
std::string experiment(const std::string& accelerators, const std::string& strategy_extra = "") {
  return R"({"model": {"preset": "gpt-1.7b", "seq_len": 2048, "tied_embeddings": false},
    "training": {"global_batch": 64, "micro_batch": 1},
    "strategy": {"preset": "dp", "dp": 1, "tp": 8, "pp": 2, "p2p": "async", "schedule": "1f1b")" +
         strategy_extra + R"(},
    "cluster": {"preset": "dgx-h100", "nodes": 2, "accelerators": )" +
         accelerators + "}}";
}

double step(const std::string& text) {
  return test::simulate_report(text)["simulation"]["step_time_s"].get<double>();
}

struct Resolved {
  Experiment e;
  ClusterSpec c;
};

Resolved resolve(const std::string& text) {
  Resolved r{test::experiment(text), {}};
  r.c = parse_cluster(r.e.cluster);
  apply_generations(r.e, r.c);
  return r;
}

}  // namespace

// Stage 0 takes 1 s a layer, stage 1 2 s a layer and 3 s more (its output layer), 12 layers: n0 = 9, n1 = 3 gives
// max(9, 2 x 3 + 3) = 9 s; one layer either way gives 10 or 11 s.
TEST_CASE("A balanced split minimises the slowest stage's time") {
  CHECK(balanced_split(12, {1, 2}, {0, 3}) == std::vector<std::int64_t>{9, 3});
  // Every stage keeps a layer, however slow.
  CHECK(balanced_split(4, {1, 100, 1}, {0, 0, 0}) == std::vector<std::int64_t>{2, 1, 1});
}

TEST_CASE("A pipeline across generations gets the split that balances its stages") {
  const Resolved r = resolve(experiment(R"({"node 1": "a100-80gb"})"));
  const AcceleratorSpec h100 = accelerator_preset("h100-sxm", "h100"), a100 = accelerator_preset("a100-80gb", "a100");
  const double t0 = layer_seconds_on(r.e, r.c, 0, h100), t1 = layer_seconds_on(r.e, r.c, 1, a100);
  CHECK(t1 > t0);  // the A100 is the slower
  const std::vector<std::int64_t>& split = r.e.strategy.layers_per_stage;
  REQUIRE(split.size() == 2);
  CHECK(split[0] + split[1] == 24);
  // Independently of balanced_split: the split chosen is the best of the 23 (stage 0 adds the embedding, stage 1
  // the output layer, each costed on its own accelerator).
  Experiment even = r.e;
  even.strategy.layers_per_stage = {12, 12};
  const std::vector<StageLayout> layouts = stage_layouts(even);
  const StageCosts k0 = stage_costs(even, r.c, layouts[0]), k1 = stage_costs(even, r.c, layouts[1]);
  const double end0 = k0.embed_forward_s + k0.embed_backward_s + k0.extra_forward_s + k0.extra_backward_s;
  const double end1 = k1.embed_forward_s + k1.embed_backward_s + k1.extra_forward_s + k1.extra_backward_s;
  const auto slowest = [&](std::int64_t n0) {
    return std::max(static_cast<double>(n0) * t0 + end0, static_cast<double>(24 - n0) * t1 + end1);
  };
  for (std::int64_t n0 = 1; n0 < 24; ++n0) CHECK(slowest(split[0]) <= slowest(n0));
  // Stage 1 is costed on the A100: its layer as on a cluster of A100 only.
  ClusterSpec all_a100 = r.c;
  all_a100.accelerator = a100;
  all_a100.node_kind.clear();
  CHECK(stage_costs(even, r.c, layouts[1]).layer_forward_s ==
        Approx(stage_costs(even, all_a100, layouts[1]).layer_forward_s).epsilon(1e-12));
  CHECK_THAT(r.c.mixed_note, Catch::Contains("stage 1 on a100-80gb (node 1)") &&
                                 Catch::Contains("strategy.layers_per_stage [" + std::to_string(split[0])));
}

// The balanced split runs the step faster than the even one, and slower than two H100 nodes.
TEST_CASE("The balanced two-generation pipeline beats the even split") {
  const double balanced = step(experiment(R"({"node 1": "a100-80gb"})"));
  const double even = step(experiment(R"({"node 1": "a100-80gb"})", R"(, "layers_per_stage": [12, 12])"));
  const double h100 = step(experiment("{}"));
  CHECK(balanced < even);
  CHECK(h100 < balanced);
}

// Data parallelism across generations (pp 1, dp 2 over an H100 node and an A100 node): the stage is costed on the
// H100 (its first GPU's); the A100 GPUs run at the ratio of a layer's time on the two.
TEST_CASE("A data-parallel group across generations runs its slower GPUs at their speed") {
  const Resolved r = resolve(experiment(R"({"node 1": "a100-80gb"})", R"(, "pp": 1, "dp": 2, "schedule": "1f1b")"));
  const AcceleratorSpec h100 = accelerator_preset("h100-sxm", "h100"), a100 = accelerator_preset("a100-80gb", "a100");
  const double ratio = layer_seconds_on(r.e, r.c, 0, h100) / layer_seconds_on(r.e, r.c, 0, a100);
  REQUIRE(r.c.generation_speed.size() == 16);
  for (int x = 0; x < 16; ++x) CHECK(r.c.speed(x) == Approx(x < 8 ? 1.0 : ratio).epsilon(1e-12));
  CHECK(ratio < 1);
}

TEST_CASE("cluster.accelerators names each bad entry at once") {
  std::string out;
  CHECK(
      test::run_placesim("simulate --set 'cluster.accelerators={\"nodes 3-1\":\"a100-80gb\",\"node 900\":\"a100-80gb\","
                         "\"gpu 2\":\"a100-80gb\",\"node 4\":\"h1000\",\"nodes 5-6\":\"a100-80gb\","
                         "\"node 6\":\"a100-80gb\"}'",
                         &out) != 0);
  for (const char* problem : {"cluster.accelerators.nodes 3-1: name nodes",
                              "cluster.accelerators.node 900: the cluster", "cluster.accelerators.gpu 2: name nodes",
                              "cluster.accelerators.node 4", "node 6 is named by another entry too"})
    CHECK_THAT(out, Catch::Contains(problem));
}

// Llama 3 8B on two nodes of two GPUs as pp 2 x dp 2, ZeRO-1: 16 layers a stage hold model states of about 4 B
// parameters at 2 + 4 + 12 / 2 bytes (48 GB), which fit an 80 GB H100, not a 40 GiB A100.
const std::string kLlamaTwoNodes =
    "simulate --set model=llama3-8b --set model.seq_len=2048 --set strategy.preset=zero1 --set strategy.tp=1 "
    "--set strategy.sp=false --set strategy.dp=2 --set strategy.pp=2 --set training.global_batch=64 "
    "--set cluster.preset=dgx-h100 --set cluster.nodes=2 --set cluster.gpus_per_node=2 --set cluster.nics_per_node=2 "
    "--set 'cluster.accelerators={\"node 1\":\"a100-40gb\"}'";

TEST_CASE("A stage on smaller GPUs is refused for its own memory") {
  std::string out;
  CHECK(test::run_placesim(kLlamaTwoNodes + " --set 'strategy.layers_per_stage=[16,16]'", &out) != 0);
  CHECK_THAT(out, Catch::Contains("memory: stage 1 does not fit its a100-40gb GPUs"));
}

// Without a split given, the balanced one keeps each stage within its own GPUs' memory: fewer layers on the A100.
TEST_CASE("The balanced split fits each stage in its own GPUs' memory") {
  std::string out;
  const std::string path = "/tmp/placesim-mixed-fit-" + std::to_string(::getpid()) + ".json";
  REQUIRE(test::run_placesim(kLlamaTwoNodes + " --report " + path, &out) == 0);
  std::ifstream in(path);
  const Json r = Json::parse(in);
  const std::string note = r["simulation"]["mixed_hardware"].get<std::string>();
  const auto at = note.find("layers_per_stage [");
  REQUIRE(at != std::string::npos);
  const int first = std::stoi(note.substr(at + 18)), second = std::stoi(note.substr(note.find(", ", at) + 2));
  CHECK(first + second == 32);
  CHECK(second < 16);
}
