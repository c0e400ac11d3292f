// Every placement over a two-axis data mesh: each of the 390,625 placements of the four states along
// dp_shard and dp_replicate (5^4 per axis) is refused citing a named rule or analysed; a sample of the accepted ones
// is simulated with the analytic bytes to the byte. bench/placement_enumeration simulates every accepted one.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/placement/Enumerate.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;

namespace {

const char* kModel = R"({"layers": 4, "hidden": 256, "heads": 4, "vocab": 512, "seq_len": 128})";
const char* kMesh = R"({"dp_replicate": 2, "dp_shard": 2})";

std::string experiment_text(const std::string& placement) {
  return std::string(R"({"model": )") + kModel +
         R"(, "training": {"global_batch": 8, "micro_batch": 1}, "strategy": {"mesh": )" + kMesh +
         R"(, "placement": )" + placement +
         R"(}, "cluster": {"preset": "dgx-a100", "nodes": 2, "gpus_per_node": 2, "nics_per_node": 2}})";
}

// The placement applied to the parsed base experiment, resolved as a parsed one would be.
Experiment with_placement(const Experiment& base, const Placement& p) {
  Experiment e = base;
  e.strategy.placement = p;
  e.training.recompute = Recompute::None;
  resolve(e);
  return e;
}

bool sane(const Analysis& a) {
  for (double v : {a.total_bytes, a.memory.host, a.bytes_per_step, a.comm.h2d, a.comm.d2h})
    if (!std::isfinite(v) || v < 0) return false;
  return a.total_bytes > 0;
}

}  // namespace

TEST_CASE("Every placement of the four states over dp_shard x dp_replicate is refused by a named rule or analysed") {
  const Experiment base = test::experiment(experiment_text("{}"));
  std::map<std::string, int> refused;
  int accepted = 0, unnamed = 0, insane = 0;
  for (const Placement& p : data_axis_placements()) {
    Experiment e = with_placement(base, p);
    try {
      check_validity(e);
    } catch (const InvalidStrategy& error) {
      std::string rule = cited_rule(error.what());
      if (rule.empty()) ++unnamed;
      ++refused[rule];
      continue;
    }
    ++accepted;
    if (!sane(analyze(e))) ++insane;
  }
  CHECK(unnamed == 0);
  CHECK(insane == 0);
  int total = accepted;
  for (const auto& [rule, n] : refused) total += n;
  CHECK(total == 78125);
  // By hand, per axis: parameters R or SG (S breaks state consistency on an axis of degree 2, M always), or
  // offloaded on both axes; gradients R, S or SG where the optimizer is sharded (S, SG) on that axis, R where it is
  // replicated, Off on both with an offloaded optimizer; activations R, M or Off (S, SG refused).
  // Parameters x gradients x optimizer on-device: per axis (P in {R, SG}) x (O, G) in {(R, R), (S, R), (S, S),
  // (S, SG), (SG, R), (SG, S), (SG, SG)} = 2 x 7 = 14, so 14^2 = 196 over two axes. With gradients and optimizer
  // offloaded on both axes: parameters (R or SG)^2 + Off = 5; with only the optimizer offloaded on both, gradients
  // R or S or SG per axis (9) times parameters (R or SG)^2 + Off (5) = 45. Total 196 + 5 + 45 = 246 per activation
  // mode, times R, M, Off.
  CHECK(accepted == 246 * 3);
  CHECK(refused.count("parameters-gathered") == 1);
  CHECK(refused.count("gradient-owner") == 1);
  CHECK(refused.count("offload-whole") == 1);
  CHECK(refused.count("activations-per-replica") == 1);
}

TEST_CASE("Activations placed differently along the two data axes are refused by rule activations-per-replica") {
  const char* modes[] = {"replicated", "sharded", "sharded-with-gather", "materialized", "offloaded"};
  int refused = 0;
  for (const char* a : modes)
    for (const char* b : modes) {
      if (std::string(a) == b) continue;
      const std::string placement = std::string(R"({"parameters": "SG", "activations": {"dp_shard": ")") + a +
                                    R"(", "dp_replicate": ")" + b + R"("}})";
      CHECK_THROWS_WITH(test::experiment(experiment_text(placement)), Catch::Contains("rule activations-per-replica"));
      ++refused;
    }
  CHECK(refused == 20);  // x 5^3 x 5^3 placements of the other states: the 312,500 two-axis placements left
}

TEST_CASE("A sample of the accepted placements simulates with the analytic bytes to the byte") {
  const Experiment base = test::experiment(experiment_text("{}"));
  std::vector<Placement> accepted;
  for (const Placement& p : data_axis_placements()) {
    try {
      check_validity(with_placement(base, p));
      accepted.push_back(p);
    } catch (const InvalidStrategy&) {
    }
  }
  REQUIRE(accepted.size() == 738);
  const std::string path = "/tmp/placesim-enum-" + std::to_string(::getpid()) + ".json";
  // Every 61st accepted placement: 13 of them, spread over the activation modes and offload combinations.
  for (std::size_t i = 0; i < accepted.size(); i += 61) {
    const std::string placement = placement_json_text(accepted[i]);
    INFO(placement);
    std::ofstream(path) << experiment_text(placement);
    std::string out;
    REQUIRE(test::run_placesim("simulate " + path + " --quiet --report " + path + ".report", &out) == 0);
    Json report = read_json_file(path + ".report");
    for (const auto& row : report["validation"]) {
      const std::string figure = row["figure"].get<std::string>();
      INFO(figure);
      if (figure.find("bound") != std::string::npos)
        CHECK(row["simulated"].get<double>() <= row["analytic"].get<double>());
      else
        CHECK(row["difference"].get<double>() == 0);
    }
  }
}
