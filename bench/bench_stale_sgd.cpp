// Times the stale-SGD executor on the size a converge-sweep runs many times: S = 32 stages, about 5,000 block
// updates, d = 512. Usage: bench_stale_sgd [repeats]. Prints milliseconds per run (best of the repeats).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "sim/converge/StaleSgd.hpp"
#include "tests/UpdateLogBuilders.hpp"

using namespace placesim;

namespace {

double best_ms(int repeats, const std::function<void()>& work) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

void bench(const char* title, const UpdateLog& trace, ObjectiveKind kind, int repeats) {
  ConvergenceSpec spec;
  spec.objective.kind = kind;
  spec.step_size = 0.01;
  std::unique_ptr<Objective> objective;
  double build = best_ms(repeats, [&] { objective = make_objective(spec.objective); });
  ConvergenceResult result;
  double run = best_ms(repeats, [&] { result = run_convergence(trace, spec, *objective); });
  double whole = best_ms(repeats, [&] { result = run_convergence(trace, spec); });
  std::printf("%-14s %-13s updates %5lld backwards %6lld points %4zu | build %6.2f ms  run %6.2f ms  both %6.2f ms\n",
              title, to_string(kind).c_str(), static_cast<long long>(result.updates),
              static_cast<long long>(result.backwards), result.points.size(), build, run, whole);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int stages = 32;
  UpdateLog stale = test::pipedream_like_log(stages, 157);  // 157 x 32 = 5,024 updates, one per backward
  UpdateLog sync = test::synchronous_log(stages, 4, 157);   // 5,024 updates after 4 backwards each
  for (ObjectiveKind kind : {ObjectiveKind::Quadratic, ObjectiveKind::Logistic, ObjectiveKind::LeastSquares}) {
    bench("pipedream-like", stale, kind, repeats);
    bench("synchronous", sync, kind, repeats);
  }
}
