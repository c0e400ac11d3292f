#include "sim/sweep/SlurmScript.hpp"

#include <filesystem>

namespace placesim {

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

SlurmFiles slurm_files(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path p(out);
  const std::string ext = p.extension().string();
  const std::string stem = (p.parent_path() / p.stem()).string();
  SlurmFiles f;
  f.script = stem + ".sbatch";
  f.shard_prefix = stem + ".shard-";
  f.shard_suffix = ext.empty() ? ".jsonl" : ext;
  f.shard_log = stem + ".shard-%a.log";
  f.merge_log = stem + ".merge.log";
  f.merge_marker_prefix = stem + ".merge-submitted.";
  return f;
}

namespace {

std::string words(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += " " + shell_quote(a);
  return out;
}

}  // namespace

std::string slurm_script(const SlurmScriptOptions& o) {
  const SlurmFiles f = slurm_files(o.out);
  const std::string name = std::filesystem::path(f.script).filename().string();
  const std::string merged = std::filesystem::path(o.out).filename().string();
  std::string s = "#!/bin/bash\n";
  s += "# A placesim sweep as a Slurm array job, written by\n#   " + o.command_line + "\n";
  s += "# (sweep " + o.sweep_hash + ", " + std::to_string(o.points) + " points, up to " +
       std::to_string(o.points_per_task()) + " per task).\n#\n";
  s += "# Submit it:  sbatch " + name + "\n";
  // The paths are the writing machine's: a node that does not see them runs nothing or writes shards elsewhere.
  s += "# The paths below (placesim, the sweep file, the results, shards and logs) are absolute paths of the machine\n"
       "# that wrote this script: they must be on a file system every node of the array mounts at the same place (a\n"
       "# shared home, project or scratch file system), not a node-local disk such as /tmp.\n";
  s += R"SH(#
# Task i of the array evaluates shard i/N of the sweep (N = the array's size, $SLURM_ARRAY_TASK_COUNT) into
# <results>.shard-i.jsonl, continuing what an earlier run of the task wrote (--resume); --jobs is the task's CPUs.
# The first task to start submits the merge: a job that waits for the whole array (afterany) and runs
# `placesim sweep merge`, which writes )SH" +
       merged + R"SH( in index order, or fails naming the missing points and the shard
# that owns them (log: <results>.merge.log).
# After a failed, timed-out or cancelled task: submit this script again (or scontrol requeue the task). Complete
# shards end at once, the others continue where they stopped, and a new merge runs. To change the number of tasks,
# edit --array (only there) before the first run; after it, delete the shard files first (they are of the old count).
)SH";
  s += "#SBATCH --job-name=placesim-sweep\n";
  s += "#SBATCH --array=0-" + std::to_string(o.array_size - 1) + "\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(o.cpus_per_task) + "\n";
  s += "#SBATCH --output=" + f.shard_log + "\n";
  s += "#SBATCH --open-mode=append\n";
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time.empty()) s += "#SBATCH --time=" + o.time + "\n";
  s += "set -euo pipefail\n";
  s += "placesim=" + shell_quote(o.placesim) + "\n";
  s += "sweep=" + shell_quote(o.sweep) + "\n";
  s += "out=" + shell_quote(o.out) + "\n";
  s += "shard_prefix=" + shell_quote(f.shard_prefix) + "\n";
  s += "shard_suffix=" + shell_quote(f.shard_suffix) + "\n";
  s += R"SH(: "${SLURM_ARRAY_TASK_ID:?submit this script with sbatch: it is a Slurm array job}"
tasks=$SLURM_ARRAY_TASK_COUNT
if [ "$SLURM_ARRAY_TASK_MIN" != 0 ] || [ "$((SLURM_ARRAY_TASK_MAX + 1))" != "$tasks" ]; then
  echo "placesim sweep: the array must be 0-(N-1), one task per shard (this one is $SLURM_ARRAY_TASK_MIN-$SLURM_ARRAY_TASK_MAX with $tasks tasks); to resume, submit the whole script again" >&2
  exit 2
fi
# Once per array job and requeue round (the first task to get here): the merge, after every task has ended. A task
# requeued with scontrol (SLURM_RESTART_COUNT > 0) submits another, so a requeue after the merge ran is merged too.
# The merge job gets this job's account, QoS and partition, not the array variables; a failed submission is
# reported and frees the marker for the next task, and never stops this task's shard.
marker=)SH" +
       shell_quote(f.merge_marker_prefix) + R"SH("$SLURM_ARRAY_JOB_ID.${SLURM_RESTART_COUNT:-0}"
if (set -o noclobber; echo "$SLURM_JOB_ID" > "$marker") 2>/dev/null; then
  shards=()
  for ((i = 0; i < tasks; i++)); do shards+=("$shard_prefix$i$shard_suffix"); done
  merge=$(printf '%q ' "$placesim" sweep merge "$out" "${shards[@]}" --sweep "$sweep")SH" +
       (o.csv.empty() ? std::string() : words({"--csv", o.csv})) + R"SH()
  submit=(sbatch --parsable --job-name=placesim-merge --dependency="afterany:$SLURM_ARRAY_JOB_ID" --cpus-per-task=1
          --open-mode=append --output=)SH" +
       shell_quote(f.merge_log) + (o.time.empty() ? "" : " --time=" + shell_quote(o.time)) + R"SH()
  if [ -n "${SLURM_JOB_ACCOUNT:-}" ]; then submit+=(--account="$SLURM_JOB_ACCOUNT"); fi
  if [ -n "${SLURM_JOB_QOS:-}" ]; then submit+=(--qos="$SLURM_JOB_QOS"); fi
  if [ -n "${SLURM_JOB_PARTITION:-}" ]; then submit+=(--partition="$SLURM_JOB_PARTITION"); fi
  if merge_job=$(printf '#!/bin/bash\n%s\n' "$merge" |
      env -u SLURM_ARRAY_JOB_ID -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT -u SLURM_ARRAY_TASK_MIN \
        -u SLURM_ARRAY_TASK_MAX -u SLURM_ARRAY_TASK_STEP -u SLURM_CPUS_PER_TASK "${submit[@]}"); then
    echo "merge job $merge_job" >> "$marker"
  else
    rm -f "$marker"
    echo "placesim sweep: could not submit the merge job; when the array has ended, run: $merge" >&2
  fi
fi
exec "$placesim" sweep "$sweep" --shard "$SLURM_ARRAY_TASK_ID/$tasks" \
  --out "$shard_prefix$SLURM_ARRAY_TASK_ID$shard_suffix" --resume)SH" +
       words(o.shard_flags) + "\n";
  return s;
}

}  // namespace placesim
