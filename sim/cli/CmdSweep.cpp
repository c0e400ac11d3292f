#include <iostream>

#include "sim/cli/Commands.hpp"
#include "sim/cli/SweepCli.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
sweep SWEEP.json --out RESULTS.jsonl [--csv RESULTS.csv] [--jobs N] [--resume] [--shard i/N] [options]
evaluate every point of a grid of experiments into JSONL (and CSV) rows; parallel, resumable, shardable
--out FILE                the JSONL file the rows are appended to (sorted by index when the sweep ends)
--csv FILE                also write the rows, flattened, as CSV
--resume                  continue the sweep --out holds: skip its points, drop a line cut by a kill
--force                   overwrite a non-empty --out instead of refusing
--shard i/N               evaluate only the points whose index % N == i (0 <= i < N)
--count                   print the number of points (and in this shard) and exit
)";

namespace {

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

int run_sweep_command(const Args& args) {
  if (args.positional().size() != 1)
    throw InputError("expected one sweep file: placesim sweep SWEEP.json --out RESULTS.jsonl");
  SweepSpec spec = load_sweep(args.positional().front());
  check_figures(spec);
  Shard shard = parse_shard(args.value("--shard").value_or("0/1"));
  if (args.has("--count")) {
    std::cout << spec.points() << " points; " << shard.size(spec.points()) << " in shard " << shard.index << "/"
              << shard.count << "\n";
    return 0;
  }
  auto out_path = args.value("--out");
  if (!out_path) throw InputError("--out RESULTS.jsonl is required (the file the rows are appended to)");
  SweepRunOptions options = sweep_run_options(args);
  ResultsFile out(*out_path, args.has("--resume"), args.has("--force"));
  const SweepRows rows(spec);
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
    std::cerr << (progress ? " in " + format_duration(progress->elapsed_s()) : "") << " -> " << *out_path << "\n";
  }
  return counts.error > 0 ? 1 : 0;
}

}  // namespace

Command command_sweep() {
  return command_from_help(kHelp, run_sweep_command, {}, sweep_run_flags());
}

}  // namespace placesim
