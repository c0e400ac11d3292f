#pragma once
#include <string>

#include "sim/cli/Cli.hpp"
#include "sim/sweep/SweepRunner.hpp"

namespace placesim {

/// The flags `sweep` and `search` share: --jobs, --device-memory, --simulator, --quiet.
std::vector<FlagSpec> sweep_run_flags();
/// The CPUs this process may run on (sched_getaffinity; under `taskset`, cgroups cpusets or Slurm's task
/// affinity fewer than the machine has).
unsigned affinity_cpus();
/// --jobs when not given: `cpus`, at most SLURM_CPUS_PER_TASK when that is set to a positive integer (Slurm without
/// task affinity lets a 1-CPU task see every core of the node).
unsigned default_jobs(unsigned cpus, const char* slurm_cpus_per_task);
/// SweepRunOptions from those flags: default_jobs(affinity_cpus(), $SLURM_CPUS_PER_TASK), this executable as the
/// simulator.
SweepRunOptions sweep_run_options(const Args& args);
/// A progress display on stderr for `total` points (a bar on a terminal), or null with --quiet.
std::unique_ptr<Progress> sweep_progress(const Args& args, const std::string& label, std::uint64_t total);
/// "240 points: 24 ok, 216 invalid, 0 filtered, 0 errors".
std::string counts_summary(const SweepCounts& counts);

}  // namespace placesim
