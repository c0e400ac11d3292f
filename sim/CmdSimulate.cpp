#include <iostream>

#include "sim/Commands.hpp"
#include "sim/Simulate.hpp"
#include "traces/Report.hpp"

namespace placesim {

namespace {

SimulateSettings settings_from(const Args& args) {
  SimulateSettings s;
  if (auto f = args.value("--fidelity")) {
    if (*f != "fast" && *f != "flow") throw InputError("--fidelity=" + *f + " is not one of: fast flow");
    s.sim.flow = *f == "flow";
  }
  if (auto g = args.value("--layer-group")) {
    Json v = parse_cli_value(*g);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1) throw InputError("--layer-group=" + *g + " must be a positive integer");
    s.expand.layer_group = static_cast<int>(v.get<std::int64_t>());
  }
  s.reproducible = args.has("--reproducible");
  return s;
}

}  // namespace

Command command_simulate() {
  Command c;
  c.name = "simulate";
  c.summary = "expand the strategy into a task DAG and simulate one training step on the cluster (SimGrid)";
  c.usage = "[EXPERIMENT.json | -] [--report FILE] [--fidelity fast|flow] [options]";
  c.flags = experiment_flags();
  c.flags.push_back({"--report", "FILE", "write the JSON report here ('-' for stdout; the summary then goes to stderr)"});
  c.flags.push_back({"--fidelity", "fast|flow", "flow: every collective step contends in the network; fast (default): "
                                                "collectives inside one node as one exact alpha-beta activity"});
  c.flags.push_back({"--layer-group", "N", "layers per compute task (default: chosen to bound the task count)"});
  c.flags.push_back({"--reproducible", "", "zero host-measured fields (wall time) so equal inputs give identical reports"});
  c.run = [](const Args& args) {
    SimulateSettings settings = settings_from(args);
    Experiment e = experiment_from_args(args, true);
    settings.sim.record.assign(static_cast<std::size_t>(e.strategy.devices()), 0);
    SimulateOutcome out = simulate_experiment(e, settings);
    std::string report_path = args.value("--report").value_or("");
    if (!report_path.empty()) write_output(report_path, dump(out.report));
    (report_path == "-" ? std::cerr : std::cout) << simulation_table(out.report);
    return 0;
  };
  return c;
}

}  // namespace placesim
