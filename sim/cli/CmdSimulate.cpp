#include <algorithm>
#include <iostream>
#include <optional>
#include <vector>

#include "sim/backend/Simulate.hpp"
#include "sim/cli/Commands.hpp"
#include "sim/cli/FitHint.hpp"
#include "sim/cli/SweepCli.hpp"
#include "sim/sweep/Subprocess.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "traces/chrome/ChromeTrace.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/profiler/KinetoExport.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/SimReport.hpp"
#include "traces/svg/Svg.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
simulate [EXPERIMENT.json | -] [--report FILE] [--trace FILE[.gz]] [--svg FILE] [options]
expand the strategy into a task DAG and simulate one training step on the cluster (SimGrid)
--report FILE             write the JSON report here ('-' for stdout; the summary then goes to stderr)
--report-figures LIST     with --report: only these dotted report paths, comma-separated (what a sweep reads of
                          each point; a 16,384-GPU report is tens of MB)
--trace FILE              write a Chrome trace (Perfetto, speedscope); gzip when FILE ends in .gz
--trace-devices SEL       devices in the trace: all, 0-15, stage0, dp0+tp0 (one pipeline), ...
--trace-detail coarse|fine  fine shows every collective step (default coarse)
--svg FILE                write a static SVG timeline overview: a row per pipeline stage (its lowest tp rank)
--profiler-trace FILE     write device 0's step as a PyTorch profiler (Kineto) trace: its kernels by class, NCCL
                          kernels with their sizes (what calibrate --trace and compare read); gzip when FILE ends
                          in .gz
--time-window A:B         the SVG shows only simulated time A to B, in seconds (10.5:12) or with units
                          (200ms:350ms); needs --svg
--svg-all-ranks           the SVG draws every selected tp rank, not only the lowest of each stage; needs --svg
--fidelity analytic|flow|full  analytic: collectives as exact alpha-beta delays; flow (default): collectives across
                          nodes as contending flows; full: every collective step a flow
--layer-group N           layers per compute task (default: chosen to bound the task count)
--symmetry on|off         on (default): simulate one of the congruent data-parallel blocks and give the others its
                          figures; off: every device (the same step time and bytes, slower)
--quiet                   print only the simulation summary, not the analytic table
--force                   simulate even past the size limits: 20 million compute tasks, an estimated 20 min of host
                          time, 16 GB of memory or a 4 GB trace (a warning past 1 min, 2 GB, 500 MB)
--reproducible            zero host-measured fields (wall time) so equal inputs give identical reports
)";

namespace {

SimulateSettings settings_from(const Args& args) {
  SimulateSettings s;
  if (auto f = args.value("--fidelity")) s.sim.fidelity = parse_fidelity(*f, "--fidelity");
  if (auto g = args.value("--layer-group")) {
    Json v = parse_cli_value(*g);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
      throw InputError("--layer-group=" + *g + " must be a positive integer");
    s.expand.layer_group = static_cast<int>(v.get<std::int64_t>());
  }
  if (auto v = args.value("--symmetry")) {
    if (*v != "on" && *v != "off") throw InputError("--symmetry=" + *v + " must be on or off");
    s.symmetry = *v == "on";
  }
  s.reproducible = args.has("--reproducible");
  s.force = args.has("--force");
  return s;
}

TraceOptions trace_options(const Args& args, const std::vector<DeviceInfo>& devices) {
  return TraceOptions{parse_device_selection(args.value("--trace-devices").value_or("all"), devices),
                      parse_trace_detail(args.value("--trace-detail").value_or("coarse"))};
}

/// The SVG's own flags, checked before any work: they need --svg, and the window must parse.
SvgOptions svg_flags(const Args& args) {
  for (const char* flag : {"--time-window", "--svg-all-ranks"})
    if (args.has(flag) && !args.has("--svg"))
      throw InputError(std::string(flag) + (args.value(flag)->empty() ? "" : "=" + *args.value(flag)) +
                       " applies to the SVG timeline only: add --svg FILE");
  SvgOptions svg;
  if (auto w = args.value("--time-window")) svg.window = parse_time_window(*w);
  svg.all_tp_ranks = args.has("--svg-all-ranks");
  return svg;
}

// The SVG first: its window is checked against the step, and a refused window should leave no trace written.
void write_pictures(const Args& args, const SimulationRecord& record, const TraceOptions& options,
                    const std::string& name, double step_time, SvgOptions svg) {
  if (auto path = args.value("--svg")) {
    svg.trace = options;
    svg.title = name;
    write_timeline_svg(*path, record, svg);
  }
  if (auto path = args.value("--trace"))
    write_chrome_trace(*path, record,
                       Json{{"experiment", name}, {"placesim_version", PLACESIM_VERSION}, {"step_time_s", step_time}},
                       options);
}

int run_abstract(const Args& args, const Experiment& e, const SvgOptions& svg) {
  SimulationRecord record;
  Json report = simulate_abstract_pipeline(e.pipeline, &record, nullptr);
  report["experiment"] = e.name;
  report["placesim_version"] = PLACESIM_VERSION;
  write_pictures(args, record, trace_options(args, record.devices), e.name,
                 report["simulation"]["step_time_s"].get<double>(), svg);
  std::string path = args.value("--report").value_or("-");
  write_output(path, dump(report));
  return 0;
}

// The report reduced to the dotted paths of `list` (comma-separated), each at its place; paths it lacks are left out.
Json report_figures(const Json& report, const std::string& list) {
  Json out = Json::object();
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string path = list.substr(start, comma - start);
    if (!path.empty())
      if (const Json* v = find_path(report, path)) set_path(out, path, *v);
    start = comma + 1;
  }
  return out;
}

// The stragglers' cost: the step of the same experiment without cluster.slow and cluster.speed_spread, simulated in a
// child process (SimGrid runs one simulation per process) with the flags that change the step. Nothing when there are
// none, or when the child fails (its error is then said on stderr).
std::optional<double> step_without_slow(Json source, const std::string& dir, const Args& args) {
  if (!source.contains("cluster") || !source["cluster"].is_object()) return std::nullopt;
  Json& cluster = source["cluster"];
  if (!cluster.contains("slow") && !cluster.contains("speed_spread")) return std::nullopt;
  cluster.erase("slow");
  cluster.erase("speed_spread");
  std::vector<std::string> argv{own_executable(),        "simulate", "-", "--report", "-", "--report-figures",
                                "simulation.step_time_s"};
  for (const char* flag : {"--fidelity", "--symmetry", "--layer-group", "--device-memory"})
    if (auto v = args.value(flag)) argv.insert(argv.end(), {flag, *v});
  if (args.has("--force")) argv.push_back("--force");
  ProcessPool pool;
  pool.start(0, argv, source.dump(), dir);
  std::vector<std::pair<std::uint64_t, ChildResult>> ended;
  while (ended.empty()) ended = pool.wait(1000);
  const ChildResult& r = ended.front().second;
  try {
    if (r.exit_code == 0) return Json::parse(r.out)["simulation"]["step_time_s"].get<double>();
  } catch (const Json::exception&) {
  }
  std::cerr << "placesim simulate: the step without the stragglers was not simulated: " << r.err << "\n";
  return std::nullopt;
}

// Whether a report, trace or picture goes to stdout ("-"): the summary then goes to stderr.
bool stdout_output(const Args& args) {
  for (const char* flag : {"--report", "--trace", "--svg"})
    if (args.value(flag).value_or("") == "-") return true;
  return false;
}

int run(const Args& args) {
  SimulateSettings settings = settings_from(args);
  const SvgOptions svg = svg_flags(args);
  Json source;
  std::string dir;
  Experiment e = experiment_from_args(args, true, nullptr, &source, &dir);
  if (!e.pipeline.is_null()) return run_abstract(args, e, svg);
  const SimulationInput in = resolve_simulation(std::move(e));
  const bool pictures = args.has("--trace") || args.has("--svg");
  settings.trace = args.has("--trace");
  // Before the device list below (one entry per device) is built for a mesh too large to expand.
  check_expandable(
      in.experiment, settings,
      settings.symmetry ? plan_folding(in.experiment, simulated_network(in.cluster)).simulated_share() : 1);
  TraceOptions options;
  if (pictures) options = trace_options(args, device_infos(in.experiment, in.cluster));
  settings.traced_devices = options.devices;
  settings.sim.fine = options.detail == TraceDetail::Fine;
  if (args.has("--profiler-trace")) {
    settings.keep_graph = true;
    if (std::find(settings.traced_devices.begin(), settings.traced_devices.end(), 0) == settings.traced_devices.end())
      settings.traced_devices.insert(settings.traced_devices.begin(), 0);
  }
  SimulatedStep step = [&] {
    try {
      return simulate_experiment(in, settings);
    } catch (const DoesNotFit& error) {
      // Refused for memory: the breakdown first, as analyze prints it (the experiment is valid by then), then the
      // refusal with the one-field changes that would fit.
      if (!args.has("--quiet")) std::cerr << analysis_table(in.experiment, analyze(in.experiment)) << "\n";
      throw with_fit_hint(error, in.experiment, args, true);
    }
  }();
  step.step_without_slow_s = step_without_slow(source, dir, args);
  write_pictures(args, step.result.record, options, in.experiment.name, step.result.step_time_s, svg);
  if (auto path = args.value("--profiler-trace")) {
    OutputFile file(*path);
    file.write(kineto_trace(step.result.record, *step.graph, step.experiment, in.cluster.accelerator, 0).dump());
    file.close();
  }
  write_flag_output(args, "--report", [&] {
    Json report = simulation_report(step);
    return dump(args.value("--report-figures") ? report_figures(report, *args.value("--report-figures")) : report);
  });
  std::ostream& summary = summary_stream(stdout_output(args) ? "-" : "");
  if (!args.has("--quiet")) summary << analysis_table(step.experiment, step.analysis) << "\n";
  summary << simulation_summary(step);
  for (const char* flag : {"--trace", "--svg", "--profiler-trace"})
    if (auto path = args.value(flag)) summary << "  wrote " << *path << "\n";
  return 0;
}

}  // namespace

Command command_simulate() {
  return command_from_help(kHelp, run, experiment_flags());
}

}  // namespace placesim
