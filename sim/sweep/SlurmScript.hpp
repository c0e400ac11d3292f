#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace placesim {

/// What `placesim sweep SWEEP.json --out RESULTS.jsonl --slurm` writes into its sbatch script.
struct SlurmScriptOptions {
  std::string placesim;  ///< absolute path of the executable the tasks run
  std::string sweep;     ///< absolute path of the sweep file
  std::string out;       ///< absolute path of the merged results
  std::uint64_t points = 0;
  std::string sweep_hash;
  std::uint64_t array_size = 1;
  unsigned cpus_per_task = 1;
  std::string partition, time;           ///< #SBATCH --partition / --time when not empty
  std::vector<std::string> shard_flags;  ///< passed to every task's sweep (--device-memory, --simulator, --no-lock)
  std::string csv;                       ///< absolute path of the merged CSV (the merge's --csv), or empty
  std::string command_line;              ///< how the script was generated, for its header

  /// The most points a task evaluates.
  std::uint64_t points_per_task() const { return (points + array_size - 1) / array_size; }
};

/// The files of a Slurm sweep, named after the merged results `out` (results.jsonl → results.sbatch,
/// results.shard-3.jsonl, results.shard-3.log, results.merge.log).
struct SlurmFiles {
  std::string script, shard_prefix, shard_suffix, shard_log, merge_log, merge_marker_prefix;
  std::string shard(std::uint64_t i) const { return shard_prefix + std::to_string(i) + shard_suffix; }
};
SlurmFiles slurm_files(const std::string& out);

/// The sbatch script: an array of `array_size` tasks of `cpus_per_task` CPUs; task i runs
/// `placesim sweep SWEEP --shard i/$SLURM_ARRAY_TASK_COUNT --out <shard i> --resume` (--jobs defaults to the task's
/// CPUs); the first task of each array job to start submits the merge, a job depending on the whole array
/// (afterany) that runs `placesim sweep merge OUT <shard 0> ... <shard N-1> --sweep SWEEP`. Resubmitting the
/// script resumes every shard and merges again.
std::string slurm_script(const SlurmScriptOptions& options);

/// `text` quoted for a POSIX shell ('...' with ' as '\'').
std::string shell_quote(const std::string& text);

}  // namespace placesim
