// Analytic sweep throughput: a 1,000,000-point analyze sweep run through run_sweep() as `placesim sweep` runs it
// (rows written to a results file), on one core and on all cores; and, for comparison, points evaluated with and
// without the parse cache of PointEvaluator.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "sim/sweep/SweepRunner.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepRows.hpp"

using namespace placesim;

namespace {

// 5 models x 10 cluster sizes x 4 tp x 5 pp x 10 dp x 5 presets x 4 micro-batch sizes x 5 global batches.
const char* kSweep = R"({"base": {"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "nodes": 64},
    "training": {"global_batch": 1024, "micro_batch": 1, "recompute": "selective"},
    "strategy": {"preset": "megatron-3d"}},
  "axes": {"model": ["llama3-8b", "llama3-70b", "llama2-13b", "gpt-22b", "gpt3-175b"],
           "cluster.nodes": {"from": 1, "to": 512, "times": 2}, "strategy.tp": [1, 2, 4, 8],
           "strategy.pp": [1, 2, 4, 8, 16], "strategy.dp": {"from": 1, "to": 512, "times": 2},
           "strategy.preset": ["megatron-3d", "zero1", "zero2", "zero3", "zero-offload"],
           "training.micro_batch": [1, 2, 4, 8], "training.global_batch": [512, 1024, 2048, 4096, 8192]}})";

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

struct Timing {
  double wall = 0, cpu = 0;
};

template <class F>
Timing timed(F&& body) {
  auto start = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();
  body();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), cpu_seconds() - cpu};
}

void report(const char* what, std::uint64_t points, Timing t) {
  double rate = static_cast<double>(points) / t.wall;
  std::printf("%-46s %8llu points %7.2f s wall %7.2f s CPU: %9.0f points/s = %6.2f M points/min (%9.0f per CPU-s)\n",
              what, static_cast<unsigned long long>(points), t.wall, t.cpu, rate, rate * 60 / 1e6,
              static_cast<double>(points) / t.cpu);
}

void full_sweep(const SweepSpec& spec, unsigned jobs, const std::string& path) {
  std::vector<std::uint64_t> todo(spec.points());
  for (std::uint64_t i = 0; i < todo.size(); ++i) todo[i] = i;
  SweepRunOptions options;
  options.jobs = jobs;
  SweepCounts counts;
  Timing run, finish;
  {
    ResultsFile out(path, false, true);
    run = timed([&] { counts = run_sweep(spec, todo, options, [&](std::string_view l) { out.append(l); }); });
    finish = timed([&] { out.finalize(); });
  }
  std::string label = "run_sweep, " + std::to_string(jobs) + (jobs == 1 ? " job" : " jobs") + " (evaluate + write)";
  report(label.c_str(), counts.total(), run);
  std::printf("%-46s %8s        %7.2f s wall %7.2f s CPU  (%llu ok, %llu invalid)\n",
              "  then sorting the file by index", "", finish.wall, finish.cpu,
              static_cast<unsigned long long>(counts.ok), static_cast<unsigned long long>(counts.invalid));
}

// Evaluates and formats the first `n` points on this thread, the cache on or off.
void evaluator_only(const SweepSpec& spec, bool cache, std::uint64_t n) {
  PointEvaluator evaluator(spec, 0, cache);
  SweepRows rows(spec);
  std::size_t bytes = 0;
  Timing t = timed([&] {
    for (std::uint64_t i = 0; i < n; ++i) {
      PointOutcome o = evaluator.evaluate(i);
      bytes += rows.line(i, evaluator.coords(), o, evaluator.experiment(), evaluator.analysis(), nullptr).size();
    }
  });
  report(cache ? "evaluate + format, parse cache on, 1 thread" : "evaluate + format, every point parsed whole", n, t);
}

}  // namespace

int main() {
  SweepSpec spec = parse_sweep_text(kSweep, "bench_sweep", "");
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  char load[64] = "?";
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (!std::fgets(load, sizeof load, f)) load[0] = '\0';
    std::fclose(f);
  }
  std::printf("bench_sweep: %llu-point analyze sweep, %u cores, load average %s",
              static_cast<unsigned long long>(spec.points()), cores, load);
  std::string path = "/tmp/bench_sweep_" + std::to_string(::getpid()) + ".jsonl";
  full_sweep(spec, 1, path);
  if (cores > 1) full_sweep(spec, cores, path);
  ::unlink(path.c_str());
  evaluator_only(spec, true, 100'000);
  evaluator_only(spec, false, 100'000);
  return 0;
}
