#include "sim/cli/SweepCli.hpp"

#include <unistd.h>

#include <climits>
#include <filesystem>

#include "sim/sweep/Cpus.hpp"
#include "strategies/sweep/SweepFigures.hpp"
#include "traces/report/Report.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

std::string own_executable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw InputError("cannot find the placesim executable (/proc/self/exe); pass --simulator PATH");
  return std::string(path, static_cast<std::size_t>(n));
}

std::vector<FlagSpec> sweep_run_flags() {
  return flag_table(R"(
--jobs N                  points evaluated at once: threads (analyze) or simulator processes (default: the CPUs
                           this process may use: its affinity mask, at most SLURM_CPUS_PER_TASK under Slurm)
--device-memory SIZE      memory per GPU to check every point against (default: the cluster's GPU)
--simulator PATH          simulate mode: the placesim executable run per point (default: this one)
--quiet                   no progress display
)");
}

SweepRunOptions sweep_run_options(const Args& args) {
  SweepRunOptions o;
  o.jobs = available_jobs();
  if (auto jobs = integer_flag(args, "--jobs", 1, 4096)) o.jobs = static_cast<unsigned>(*jobs);
  if (auto mem = args.value("--device-memory")) {
    o.device_memory_bytes = parse_bytes(*mem, "--device-memory");
    if (!(o.device_memory_bytes > 0)) throw InputError("--device-memory=" + *mem + " must be positive");
  }
  o.simulator = args.value("--simulator").value_or("");
  // Absolute, as simulator processes start in the sweep file's directory.
  o.simulator = o.simulator.empty() ? own_executable() : std::filesystem::absolute(o.simulator).string();
  return o;
}

std::unique_ptr<Progress> sweep_progress(const Args& args, const std::string& label, std::uint64_t total) {
  if (args.has("--quiet")) return nullptr;
  return std::make_unique<Progress>(label, total, ::isatty(2) != 0);
}

void check_sweep_figures(const SweepSpec& spec, const std::string& simulator) {
  if (spec.figures == default_figures(spec.mode)) return;
  const std::vector<Json> experiments = figure_reference_experiments();
  std::vector<Json> reports;
  for (const Json& x : experiments) {
    Experiment e = parse_experiment(x, "");
    e.device_memory_bytes = cluster_fit(x["cluster"]).device_memory_bytes;  // as a point with a cluster has it
    reports.push_back(analysis_report(e, analyze(e)));
  }
  if (spec.mode == SweepMode::Simulate)
    for (Json& report : simulated_reports(simulator, spec.fidelity, experiments)) reports.push_back(std::move(report));
  check_figures_in_reports(spec, reports);
}

std::string counts_summary(const SweepCounts& c) {
  return std::to_string(c.total()) + " points: " + std::to_string(c.ok) + " ok, " + std::to_string(c.invalid) +
         " invalid, " + std::to_string(c.filtered) + " filtered, " + std::to_string(c.error) + " errors";
}

}  // namespace placesim
