#pragma once
#include <string>

#include "sim/cli/Cli.hpp"
#include "sim/sweep/SweepRunner.hpp"

namespace placesim {

/// The path of the running executable (/proc/self/exe): the simulator child processes run.
std::string own_executable();
/// The flags `sweep` and `search` share: --jobs, --device-memory, --simulator, --quiet.
std::vector<FlagSpec> sweep_run_flags();
/// SweepRunOptions from those flags: available_jobs() (sim/sweep/Cpus.hpp), this executable as the simulator.
SweepRunOptions sweep_run_options(const Args& args);
/// A progress display on stderr for `total` points (a bar on a terminal), or null with --quiet.
std::unique_ptr<Progress> sweep_progress(const Args& args, const std::string& label, std::uint64_t total);
/// Throws InputError naming every figure the sweep file lists that its rows could never carry, with the nearest
/// known path: checked against the analyze reports of figure_reference_experiments() and, in simulate mode, their
/// reports from `simulator` (so the simulate report's paths are what the simulator writes). The default figures
/// (a sweep that lists none) are not checked, and run nothing.
void check_sweep_figures(const SweepSpec& spec, const std::string& simulator);
/// "240 points: 24 ok, 216 invalid, 0 filtered, 0 errors".
std::string counts_summary(const SweepCounts& counts);

}  // namespace placesim
