#include <filesystem>
#include <iostream>

#include "sim/backend/Simulate.hpp"
#include "sim/cli/Commands.hpp"
#include "strategies/calibrate/Calibration.hpp"
#include "traces/profiler/TraceCalibration.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
calibrate MEASURED.json | --trace TRACE... EXPERIMENT.json
fit an accelerator/fabric profile to measured GEMM, memory, attention, collective and layer points, or to a profiler trace of one node
--trace FILE              a PyTorch profiler (Kineto) trace, .json or .json.gz, or a folder of them, one per rank
                          (repeatable): fit the profile and the host time to it against EXPERIMENT.json, the run
                          the trace recorded; the result is a calibration file an experiment names with
                          "calibration"
--out FILE                write the fitted profile file here (default: stdout)
)";

namespace {

int run_measured(const Args& args) {
  if (args.positional().size() != 1)
    throw InputError("expected one measurements file (placesim calibrate MEASURED.json --out PROFILE.json)");
  for (const char* flag : {"--model", "--model-hf", "--strategy", "--stack", "--set", "--device-memory"})
    if (args.has(flag))
      throw InputError(std::string(flag) +
                       " applies to calibrate --trace (the experiment a trace ran), not to a "
                       "measurements file");
  const std::string path = args.positional().front();
  const Calibration cal = calibrate(read_json_file(path), std::filesystem::path(path).parent_path().string());
  const std::string out = args.value("--out").value_or("-");
  // The residual table goes to stderr when the profile itself goes to stdout, so the JSON stays parseable.
  summary_stream(out) << residual_table(cal);
  Json profile = calibration_profile_json(cal);
  if (!profile.contains("description")) profile["description"] = "fitted by placesim calibrate to " + path;
  write_output(out, profile.dump(2) + "\n");
  return 0;
}

int run_trace(const Args& args) {
  const std::vector<std::string> traces = args.values("--trace");
  const Experiment e = experiment_from_args(args, false);
  refuse_abstract_pipeline(e, "calibrate --trace", "the model, cluster and placement the trace ran");
  const SimulationInput in = resolve_simulation(e);
  const ProfilerTrace trace = read_profiler_traces(traces);
  const TraceSummary summary = summarize(trace);
  const TraceCalibration cal = calibrate_from_trace(summary, in.experiment, in.cluster, trace.files);
  const std::string out = args.value("--out").value_or("-");
  std::ostream& text = summary_stream(out);
  text << "read " << trace.files.size() << " trace file(s): " << trace.kernels.size() << " GPU activities, "
       << summary.steps.size() << " step(s) of " << summary.ranks << " rank(s) (" << trace.runtime << ")\n";
  for (const std::string& note : trace.notes) text << "  note: " << note << "\n";
  text << calibration_table(cal);
  write_output(out, cal.file.dump(2) + "\n");
  return 0;
}

int run_calibrate(const Args& args) {
  return args.has("--trace") ? run_trace(args) : run_measured(args);
}

}  // namespace

Command command_calibrate() {
  Command c = command_from_help(kHelp, run_calibrate, experiment_flags());
  c.input_flags = {"--trace"};
  return c;
}

}  // namespace placesim
