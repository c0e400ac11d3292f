#pragma once

namespace placesim {

/// The CPUs this process may run on (sched_getaffinity; under `taskset`, cgroup cpusets or Slurm's task affinity
/// fewer than the machine has).
unsigned affinity_cpus();
/// The parallelism a command uses when not told: `cpus`, at most SLURM_CPUS_PER_TASK when that is set to a positive
/// integer (Slurm without task affinity lets a 1-CPU task see every core of the node).
unsigned default_jobs(unsigned cpus, const char* slurm_cpus_per_task);
/// default_jobs(affinity_cpus(), $SLURM_CPUS_PER_TASK): what `sweep --jobs`, `search --jobs` and
/// `converge-sweep --threads` default to.
unsigned available_jobs();

}  // namespace placesim
