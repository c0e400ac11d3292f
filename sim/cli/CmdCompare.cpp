#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "sim/backend/Simulate.hpp"
#include "sim/cli/Commands.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/profiler/KinetoExport.hpp"
#include "traces/profiler/TraceCompare.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
compare TRACE... EXPERIMENT.json
simulate the run a profiler trace recorded and say, phase by phase and kernel class by class, where the two differ
--out FILE                write the comparison as JSON here ('-' for stdout; the text then goes to stderr)
--svg FILE                write the measured and the simulated step one above the other as an SVG
--simulated-trace FILE    keep the simulated step as a profiler (Kineto) trace here (default: a temporary file)
--fidelity analytic|flow|full  simulation fidelity (default flow)
)";

namespace {

int run_compare(const Args& args) {
  const std::vector<std::string>& pos = args.positional();
  if (pos.size() < 2)
    throw InputError("expected a trace and the experiment it ran (placesim compare TRACE... EXPERIMENT.json)");
  const std::vector<std::string> experiment{pos.back()};
  const std::vector<std::string> traces(pos.begin(), pos.end() - 1);
  const ProfilerTrace measured = read_profiler_traces(traces);
  const TraceSummary ms = summarize(measured);
  if (ms.steps.empty()) throw InputError(traces.front() + ": no step with GPU kernels to compare");
  const Experiment e = experiment_from_args(args, false, &experiment);
  refuse_abstract_pipeline(e, "compare", "the model, cluster and placement the trace ran");
  const SimulationInput in = resolve_simulation(e);
  SimulateSettings settings;
  if (auto f = args.value("--fidelity")) settings.sim.fidelity = parse_fidelity(*f, "--fidelity");
  settings.keep_graph = true;
  settings.traced_devices = {0};
  const SimulatedStep step = simulate_experiment(in, settings);
  // The simulated step as the profiler would have recorded it, read back by the same reader as the measured one.
  const bool keep = args.has("--simulated-trace");
  const std::string path =
      keep ? *args.value("--simulated-trace")
           : (std::filesystem::temp_directory_path() / ("placesim-compare-" + std::to_string(::getpid()) + ".json"))
                 .string();
  {
    OutputFile file(path);
    file.write(kineto_trace(step.result.record, *step.graph, in.experiment, in.cluster.accelerator, 0).dump());
    file.close();
  }
  ProfilerTrace simulated;
  try {
    simulated = read_profiler_traces({path});
  } catch (...) {
    if (!keep) std::filesystem::remove(path);
    throw;
  }
  if (!keep) std::filesystem::remove(path);
  const TraceSummary ss = summarize(simulated);
  const TraceComparison c = compare_summaries(ms, ss);
  const std::string out = args.value("--out").value_or("");
  Json report = comparison_json(c);
  report["placesim_version"] = PLACESIM_VERSION;
  if (!out.empty()) write_output(out, report.dump(2) + "\n");
  if (auto svg = args.value("--svg")) write_output(*svg, comparison_svg(measured, ms, simulated, ss));
  summary_stream(out) << comparison_text(c);
  return 0;
}

}  // namespace

Command command_compare() {
  return command_from_help(kHelp, run_compare, experiment_flags());
}

}  // namespace placesim
