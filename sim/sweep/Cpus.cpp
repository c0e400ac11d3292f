#include "sim/sweep/Cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace placesim {

unsigned affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned default_jobs(unsigned cpus, const char* slurm_cpus_per_task) {
  unsigned jobs = std::max(1u, cpus);
  if (slurm_cpus_per_task && *slurm_cpus_per_task) {
    std::string text = slurm_cpus_per_task;
    if (text.size() <= 6 && text.find_first_not_of("0123456789") == std::string::npos && std::stoul(text) > 0)
      jobs = std::min(jobs, static_cast<unsigned>(std::stoul(text)));
  }
  return jobs;
}

unsigned available_jobs() {
  return default_jobs(affinity_cpus(), std::getenv("SLURM_CPUS_PER_TASK"));
}

}  // namespace placesim
