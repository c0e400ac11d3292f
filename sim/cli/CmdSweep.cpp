#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/cli/Commands.hpp"
#include "sim/cli/SweepCli.hpp"
#include "sim/sweep/SlurmScript.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/output/OutputPolicy.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepMerge.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
sweep SWEEP.json --out RESULTS.jsonl [--csv RESULTS.csv] [--jobs N] [--resume] [--shard i/N] [--slurm] [options]
 | sweep merge OUT.jsonl SHARD.jsonl... [--sweep SWEEP.json] | sweep merge --check SHARD.jsonl...
evaluate every point of a grid of experiments into JSONL (and CSV) rows; parallel, resumable, shardable
--out FILE                the JSONL file the rows are appended to (sorted by index when the sweep ends)
--csv FILE                also write the rows, flattened, as CSV (merge: needs --sweep)
--resume                  continue the sweep --out holds: skip its points, drop a line cut by a kill
--force                   overwrite a non-empty --out instead of refusing
--shard i/N               evaluate only the points whose index % N == i (0 <= i < N)
--count                   print the number of points (and in this shard) and exit
--no-lock                 do not lock --out (for filesystems without flock; only when nothing else writes it)
--slurm                   write RESULTS.sbatch, a Slurm array job of the sweep with its merge, and exit
--array-size N            --slurm: the number of array tasks = shards (default: 16, at most the points)
--cpus-per-task C         --slurm: CPUs per task, which is also each task's --jobs (default 1)
--partition P             --slurm: #SBATCH --partition
--time T                  --slurm: #SBATCH --time (per task), e.g. 2:00:00
--check                   merge: only check that the files hold every point once, write nothing
--sweep FILE              merge: the sweep file the rows must come from (its hash and point count)
)";

namespace {

// A merge must not write over a shard: `sweep merge results.shard-0.jsonl results.shard-1.jsonl ...` without the
// output would otherwise replace shard 0 (only after a successful check, which then fails anyway, but say why).
void refuse_shard_as_output(const std::string& out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(out, ec)) return;  // a device or FIFO holds no shard (and would block)
  std::ifstream in(out, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first)) return;
  auto id = row_identity(first);
  if (id && !id->shard.empty())
    throw InputError("sweep merge: the first file, " + out + ", is the output but holds rows of shard " + id->shard +
                     ": name the merged file first (placesim sweep merge OUT.jsonl SHARD.jsonl...)");
}

// The points of this shard not yet in the results file, ascending.
std::vector<std::uint64_t> points_to_do(std::uint64_t points, const Shard& shard,
                                        const std::vector<std::uint64_t>& done) {
  std::vector<std::uint64_t> todo;
  todo.reserve(shard.size(points) - std::min<std::uint64_t>(done.size(), shard.size(points)));
  auto skip = done.begin();
  for (std::uint64_t i = shard.index; i < points; i += shard.count) {
    while (skip != done.end() && *skip < i) ++skip;
    if (skip == done.end() || *skip != i) todo.push_back(i);
  }
  return todo;
}

// `sweep merge OUT SHARD...` / `sweep merge --check SHARD...`.
int run_merge_command(const Args& args) {
  std::vector<std::string> files(args.positional().begin() + 1, args.positional().end());
  MergeOptions m;
  if (!args.has("--check")) {
    if (files.size() < 2)
      throw InputError(
          "expected the merged file and the shard files: placesim sweep merge OUT.jsonl SHARD.jsonl... "
          "(or --check SHARD.jsonl...)");
    m.out = files.front();
    files.erase(files.begin());
    refuse_shard_as_output(m.out);
  } else if (files.empty()) {
    throw InputError("expected the shard files: placesim sweep merge --check SHARD.jsonl...");
  }
  m.shards = files;
  std::optional<SweepSpec> spec;
  if (auto sweep = args.value("--sweep")) {
    spec = load_sweep(*sweep);
    m.sweep_hash = spec->hash;
    m.sweep_points = spec->points();
  }
  if (args.has("--csv") && !spec)
    throw InputError("--csv needs --sweep SWEEP.json (its axes and figures name the columns)");
  if (args.has("--csv") && m.out.empty()) throw InputError("--csv writes the merged rows; it cannot go with --check");
  if (!m.out.empty()) {
    std::vector<std::string> inputs = m.shards;
    if (auto sweep = args.value("--sweep")) inputs.push_back(*sweep);
    std::vector<OutputPath> outputs{{"OUT", m.out}};
    if (auto csv = args.value("--csv")) outputs.push_back({"--csv", *csv});
    check_outputs(outputs, inputs, false, "");
  }
  MergeSummary r = merge_results(m);
  if (auto csv = args.value("--csv")) write_results_csv(*spec, m.out, *csv);
  std::cerr << "placesim sweep merge: " << r.points << " points of sweep " << r.sweep << " (placesim " << r.version
            << "), each once in " << files.size() << " file(s): " << r.ok << " ok, " << r.invalid << " invalid, "
            << r.filtered << " filtered, " << r.error << " errors" << (m.out.empty() ? "" : " -> " + m.out) << "\n";
  return 0;
}

// `--slurm`: the sbatch script of the sweep.
int write_slurm_script(const Args& args, const SweepSpec& spec, const std::string& sweep_path) {
  namespace fs = std::filesystem;
  auto out = args.value("--out");
  if (!out)
    throw InputError("--slurm needs --out RESULTS.jsonl (the merged results; shards and logs are named after it)");
  for (const char* flag : {"--shard", "--resume", "--force", "--count"})
    if (args.has(flag))
      throw InputError(std::string("--slurm writes a script and runs nothing; ") + flag +
                       " belongs to the tasks, which the script runs with --shard and --resume");
  SlurmScriptOptions o;
  o.placesim = sweep_run_options(args).simulator;
  o.sweep = fs::absolute(sweep_path).lexically_normal().string();
  o.out = fs::absolute(*out).lexically_normal().string();
  o.points = spec.points();
  o.sweep_hash = spec.hash;
  o.array_size = std::min<std::uint64_t>(16, spec.points());
  if (auto n = integer_flag(args, "--array-size", 1, 100000)) {
    o.array_size = static_cast<std::uint64_t>(*n);
    if (o.array_size > spec.points())
      throw InputError("--array-size=" + *args.value("--array-size") + " is more than the sweep's " +
                       std::to_string(spec.points()) + " points (a task would have nothing to do)");
  }
  if (auto c = integer_flag(args, "--cpus-per-task", 1, 4096)) o.cpus_per_task = static_cast<unsigned>(*c);
  if (args.has("--jobs"))
    throw InputError("--jobs with --slurm: each task's --jobs is its CPUs; set them with --cpus-per-task");
  o.partition = args.value("--partition").value_or("");
  o.time = args.value("--time").value_or("");
  if (auto mem = args.value("--device-memory")) o.shard_flags = {"--device-memory", *mem};
  if (args.has("--simulator")) o.shard_flags.insert(o.shard_flags.end(), {"--simulator", o.placesim});
  if (args.has("--no-lock")) o.shard_flags.push_back("--no-lock");
  if (auto csv = args.value("--csv")) o.csv = fs::absolute(*csv).lexically_normal().string();
  // Slurm reads #SBATCH lines with its own parser (whitespace splits, # starts a comment, % is a file pattern).
  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--out", o.out}, {"--csv", o.csv}})
    for (unsigned char c : value)
      if (c <= ' ' || c == '#' || c == '%' || c == '"' || c == '\'' || c == '\\' || c == 0x7f)
        throw InputError(
            flag + "=" + value +
            ": the path goes into the Slurm script's #SBATCH lines, which cannot hold spaces, #, %, quotes "
            "or backslashes; choose a plain path");
  for (const auto& [flag, value] :
       {std::pair<std::string, std::string>{"--partition", o.partition}, {"--time", o.time}})
    if (value.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:-") !=
        std::string::npos)
      throw InputError(flag + "=" + value + " must be a plain Slurm value (letters, digits, _ . , : -)");
  // The folder of the results, shards and logs (Slurm does not create the folder of an --output file).
  std::error_code ec;
  fs::create_directories(fs::path(o.out).parent_path(), ec);
  if (!o.csv.empty()) fs::create_directories(fs::path(o.csv).parent_path(), ec);
  if (!fs::is_directory(fs::path(o.out).parent_path()))
    throw InputError("--out=" + *out + ": cannot create its folder" + (ec ? " (" + ec.message() + ")" : ""));
  o.command_line = "placesim sweep " + sweep_path + " --out " + *out + " --slurm --array-size " +
                   std::to_string(o.array_size) + " --cpus-per-task " + std::to_string(o.cpus_per_task);
  const SlurmFiles files = slurm_files(o.out);
  const std::string script = slurm_script(o);
  // A script edited since it was written (its partition, modules, environment) is not replaced silently.
  if (fs::exists(files.script) && read_text_file(files.script) != script)
    throw InputError(files.script +
                     " exists and differs from the script this sweep writes (edited by hand, or "
                     "written for other options): remove it, or name another --out");
  write_file_atomically(files.script, script);
  std::cout << "placesim sweep: wrote " << files.script << ": " << o.array_size << " array tasks x " << o.cpus_per_task
            << " CPU(s), " << spec.points() << " points (up to " << o.points_per_task() << " per task), merged into "
            << o.out << "\nsubmit it with:  sbatch " << files.script << "\n";
  return 0;
}

int run_sweep_command(const Args& args) {
  if (!args.positional().empty() && args.positional().front() == "merge") return run_merge_command(args);
  for (const char* flag : {"--check", "--sweep"})
    if (args.has(flag)) throw InputError(std::string(flag) + " belongs to placesim sweep merge");
  if (args.positional().size() != 1)
    throw InputError("expected one sweep file: placesim sweep SWEEP.json --out RESULTS.jsonl");
  SweepSpec spec = load_sweep(args.positional().front());
  check_sweep_figures(spec, spec.mode == SweepMode::Simulate ? sweep_run_options(args).simulator : "");
  if (args.has("--slurm")) return write_slurm_script(args, spec, args.positional().front());
  for (const char* flag : {"--array-size", "--cpus-per-task", "--partition", "--time"})
    if (args.has(flag)) throw InputError(std::string(flag) + " goes with --slurm");
  Shard shard = parse_shard(args.value("--shard").value_or("0/1"));
  if (args.has("--count")) {
    std::cout << spec.points() << " points; " << shard.size(spec.points()) << " in shard " << shard.index << "/"
              << shard.count << "\n";
    return 0;
  }
  auto out_path = args.value("--out");
  if (!out_path) throw InputError("--out RESULTS.jsonl is required (the file the rows are appended to)");
  SweepRunOptions options = sweep_run_options(args);
  options.shard = shard;
  ResultsFile out(*out_path, args.has("--resume"), args.has("--force"), !args.has("--no-lock"));
  const SweepRows rows(spec, shard, options.device_memory_bytes);
  ResumeScan scan;
  if (args.has("--resume"))
    scan = out.resume([&](std::uint64_t i) -> std::optional<std::string> {
      if (i >= spec.points() || !shard.contains(i)) return std::nullopt;
      return rows.prefix(i, point_coords(spec, i));
    });
  std::vector<std::uint64_t> todo = points_to_do(spec.points(), shard, scan.done);
  auto progress = sweep_progress(args, "placesim sweep", todo.size());
  options.progress = progress.get();
  SweepCounts counts = run_sweep(spec, todo, options, [&](std::string_view lines) { out.append(lines); });
  if (progress) progress->finish();
  out.finalize();
  if (auto csv = args.value("--csv")) write_results_csv(spec, *out_path, *csv);
  if (!args.has("--quiet") || counts.error > 0) {
    std::cerr << "placesim sweep: " << counts_summary(counts);
    if (!scan.done.empty()) std::cerr << " (" << scan.done.size() << " more were already in " << *out_path << ")";
    std::cerr << (progress ? " in " + format_duration(progress->elapsed_s()) : "") << " with " << options.jobs
              << (options.jobs == 1 ? " job" : " jobs") << " -> " << *out_path << "\n";
  }
  return counts.error > 0 ? 1 : 0;
}

}  // namespace

Command command_sweep() {
  return command_from_help(kHelp, run_sweep_command, {}, sweep_run_flags());
}

}  // namespace placesim
