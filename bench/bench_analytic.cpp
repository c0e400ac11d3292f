// Experiments per second of the analytic core called as a library function: 100,000 different experiments
// (models x strategy presets x meshes x micro-batch sizes x recompute), each analyzed once.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"

using namespace placesim;

namespace {

constexpr std::size_t kExperiments = 100'000;

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

// The JSON of the first kExperiments valid combinations, in a fixed order.
std::vector<Json> experiment_jsons() {
  std::vector<Json> out;
  std::vector<std::string> models;
  for (const auto& [name, description] : model_preset_list()) models.push_back(name);
  for (const auto& model : models)
    for (const auto& [preset, description] : strategy_preset_list())
      for (int tp : {1, 2, 4, 8})
        for (int pp : {1, 2, 4, 8})
          for (int dp = 1; dp <= 64; dp *= 2)
            for (int mb : {1, 2, 4})
              for (const char* recompute : {"none", "selective", "full"}) {
                Json j{{"model", model},
                       {"training", {{"micro_batch", mb}, {"recompute", recompute}}},
                       {"strategy", {{"preset", preset}, {"tp", tp}, {"pp", pp}, {"dp", dp}, {"microbatches", 8}}}};
                try {
                  check_validity(parse_experiment(j, ""));
                } catch (const InputError&) {
                  continue;
                }
                out.push_back(std::move(j));
                if (out.size() == kExperiments) return out;
              }
  return out;
}

template <class F>
void measure(const char* what, std::size_t n, F&& body) {
  auto start = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();
  double checksum = body();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cpu = cpu_seconds() - cpu;
  std::printf(
      "%-52s %7zu in %6.3f s wall (%6.3f s CPU): %10.0f experiments/s wall, %10.0f per CPU-second"
      "  [checksum %.6g]\n",
      what, n, wall, cpu, static_cast<double>(n) / wall, static_cast<double>(n) / cpu, checksum);
}

}  // namespace

int main() {
  std::vector<Json> jsons = experiment_jsons();
  std::vector<Experiment> experiments;
  experiments.reserve(jsons.size());
  for (const auto& j : jsons) experiments.push_back(parse_experiment(j, ""));
  std::printf(
      "bench_analytic: %zu different valid experiments (%zu model presets x strategy presets x tp x pp x dp x "
      "micro-batch x recompute), one core\n",
      experiments.size(), model_preset_list().size());
  measure("analyze(experiment)", experiments.size(), [&] {
    double sum = 0;
    for (const auto& e : experiments) sum += analyze(e).total_bytes;
    return sum;
  });
  measure("check_validity + analyze + check_fits", experiments.size(), [&] {
    double sum = 0;
    for (const auto& e : experiments) {
      check_validity(e);
      Analysis a = analyze(e);
      check_fits(e, a);
      sum += a.bytes_per_step;
    }
    return sum;
  });
  measure("parse_experiment(JSON) + check_validity + analyze", jsons.size(), [&] {
    double sum = 0;
    for (const auto& j : jsons) {
      Experiment e = parse_experiment(j, "");
      check_validity(e);
      sum += analyze(e).model_flops_per_step;
    }
    return sum;
  });
  return 0;
}
