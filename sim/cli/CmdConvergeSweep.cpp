#include <iostream>

#include "sim/cli/Commands.hpp"
#include "sim/converge/ConvergeSweep.hpp"
#include "sim/converge/ConvergeSweepOutput.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
converge-sweep [SWEEP.json] [--quick] [--out TABLE.csv] [--jsonl FILE] [--svg FILE] [--threads N]
final loss of each pipeline schedule over stage counts at equal simulated time, step size tuned
--quick                   a small sweep (S = 2, 4; d = 32; budget 200) for tests; a sweep file still applies on top
--out FILE                write the table as CSV: one row per objective, S and schedule, with the tuned step
--jsonl FILE              write every run (each step size of each cell) as JSON lines
--svg FILE                write final loss against S per schedule, one panel per objective
--threads N               worker threads (default: the sweep file's, else the CPUs this process may use)
)";

namespace {

ConvergeSweepSpec sweep_of(const Args& args) {
  ConvergeSweepSpec spec = args.has("--quick") ? quick_converge_sweep() : default_converge_sweep();
  const auto& files = args.positional();
  if (files.size() > 1)
    throw InputError("converge-sweep takes at most one sweep file, got " + std::to_string(files.size()));
  if (!files.empty()) spec = parse_converge_sweep(read_json_file(files.front()), spec);
  if (auto threads = integer_flag(args, "--threads", 1, 1024)) spec.threads = static_cast<int>(*threads);
  return spec;
}

int run(const Args& args) {
  const ConvergeSweepSpec spec = sweep_of(args);
  const std::vector<ConvergeSweepCell> cells = run_converge_sweep(spec);
  std::cout << sweep_table(cells);
  write_flag_output(args, "--out", [&] { return sweep_csv(cells); });
  write_flag_output(args, "--jsonl", [&] { return sweep_jsonl(cells); });
  write_flag_output(args, "--svg", [&] { return sweep_svg(cells); });
  return 0;
}

}  // namespace

Command command_converge_sweep() {
  return command_from_help(kHelp, run);
}

}  // namespace placesim
