// Every placement over a two-axis data mesh, simulated: the 78,125 placements of parameters, gradients
// and optimizer state along dp_shard x dp_replicate (2 x 2 on two 2-GPU nodes) with each activation mode are checked;
// every accepted one is simulated by the placesim binary (one process each: one simulation per process) and its
// validation rows compared with the analytic figures: exact rows must be identical, bounds not exceeded.
// (tests/test_placement_enumeration.cpp runs the check of all and simulates a sample.)
//
//   placement_enumeration [PLACESIM_BINARY]      (default: build/placesim)
//
// Prints the refusals per rule, the accepted count, the simulated count, the mismatches and the wall time.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/placement/Enumerate.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;

namespace {

std::string experiment_text(const std::string& placement) {
  return std::string(R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 512, "seq_len": 128},)") +
         R"( "training": {"global_batch": 8, "micro_batch": 1}, "strategy": {"mesh": {"dp_replicate": 2,)" +
         R"( "dp_shard": 2}, "placement": )" + placement +
         R"(}, "cluster": {"preset": "dgx-a100", "nodes": 2, "gpus_per_node": 2, "nics_per_node": 2}})";
}

int run(const std::string& command) {
  int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string placesim = argc > 1 ? argv[1] : "build/placesim";
  const auto start = std::chrono::steady_clock::now();
  const Experiment base = parse_experiment(Json::parse(experiment_text("{}")), ".");
  std::map<std::string, int> refused;
  std::vector<Placement> accepted;
  for (const Placement& p : data_axis_placements()) {
    Experiment e = base;
    e.strategy.placement = p;
    e.training.recompute = Recompute::None;
    resolve(e);
    try {
      check_validity(e);
      analyze(e);
      accepted.push_back(p);
    } catch (const InvalidStrategy& error) {
      std::string rule = cited_rule(error.what());
      ++refused[rule.empty() ? "(no rule cited)" : rule];
    }
  }
  std::printf("placements (one activation mode for both axes): 78125\n");
  for (const auto& [rule, n] : refused) std::printf("  refused by %-26s %6d\n", rule.c_str(), n);
  std::printf("  accepted and analysed              %6zu\n", accepted.size());
  std::printf("  (+ 312500 with activations differing across the axes, refused by activations-per-replica)\n");
  const std::string path = "/tmp/placesim-enumeration-" + std::to_string(::getpid()) + ".json";
  int simulated = 0, failed = 0, mismatched = 0;
  for (const Placement& p : accepted) {
    std::ofstream(path) << experiment_text(placement_json_text(p));
    if (run(placesim + " simulate " + path + " --quiet --report " + path + ".report") != 0) {
      ++failed;
      std::printf("  simulate failed: %s\n", placement_json_text(p).c_str());
      continue;
    }
    ++simulated;
    Json report = read_json_file(path + ".report");
    for (const auto& row : report["validation"]) {
      const bool bound = row["figure"].get<std::string>().find("bound") != std::string::npos;
      const double a = row["analytic"].get<double>(), s = row["simulated"].get<double>();
      if (bound ? s > a : s != a) {
        ++mismatched;
        std::printf("  mismatch %s: %s analytic %.0f simulated %.0f\n", placement_json_text(p).c_str(),
                    row["figure"].get<std::string>().c_str(), a, s);
      }
    }
  }
  std::remove(path.c_str());
  std::remove((path + ".report").c_str());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("simulated %d of %zu accepted placements: %d failed, %d validation rows off; %.1f s wall\n", simulated,
              accepted.size(), failed, mismatched, wall);
  return failed == 0 && mismatched == 0 ? 0 : 1;
}
