#include <iostream>
#include <sstream>

#include "sim/cli/Commands.hpp"
#include "sim/converge/Converge.hpp"
#include "sim/converge/ConvergeModel.hpp"
#include "sim/converge/ConvergenceOutput.hpp"
#include "traces/report/Report.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
converge EXPERIMENT.json [--steps N | --time-budget S] [--step-size G] [--out-csv F] [--out-jsonl F] [--svg F]
  [--report F]
run stale SGD on a synthetic objective as the experiment's pipeline schedule orders the updates
--steps N                 steps to run (default: pipeline.steps; model experiments: 100)
--time-budget S           run for this much simulated time instead (seconds of the pipeline)
--step-size G             step size gamma (default: convergence.step_size)
--out-csv FILE            write the loss curve as CSV (updates,time_s,loss,grad_norm)
--out-jsonl FILE          write the loss curve as JSON lines
--svg FILE                write the loss against simulated time as SVG
--report FILE             write the JSON report ('-' for stdout; the summary then goes to stderr)
)";

namespace {

// Steps a model + cluster experiment runs when neither --steps nor --time-budget is given: its strategy describes
// one step, which is one update of a synchronous schedule.
constexpr int kDefaultModelSteps = 100;

Json number_flag(const Args& args, const std::string& flag) {
  const std::string text = *args.value(flag);
  const Json v = parse_cli_value(text);
  if (!v.is_number()) throw InputError(flag + "=" + text + " must be a number");
  return v;
}

RunLength run_length(const Args& args) {
  RunLength length;
  if (args.has("--steps") && args.has("--time-budget"))
    throw InputError("--steps and --time-budget both say how long to run; give one");
  if (args.has("--steps")) {
    const Json v = number_flag(args, "--steps");
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1000000000)
      throw InputError("--steps=" + *args.value("--steps") + " must be a positive integer");
    length.steps = static_cast<int>(v.get<std::int64_t>());
  }
  if (args.has("--time-budget")) {
    length.budget_s = number_flag(args, "--time-budget").get<double>();
    if (!(length.budget_s > 0))
      throw InputError("--time-budget=" + *args.value("--time-budget") + " must be a positive number of seconds");
  }
  return length;
}

ConvergenceSpec convergence_of(const Args& args, const Experiment& e) {
  ConvergenceSpec spec = e.convergence.value_or(ConvergenceSpec{});
  if (args.has("--step-size")) {
    spec.step_size = number_flag(args, "--step-size").get<double>();
    if (!(spec.step_size > 0)) throw InputError("--step-size=" + *args.value("--step-size") + " must be positive");
  }
  return spec;
}

void write_files(const Args& args, const Json& report, const ConvergenceResult& result, const std::string& title) {
  write_flag_output(args, "--out-csv", [&] {
    std::ostringstream text;
    write_convergence_csv(text, result);
    return text.str();
  });
  write_flag_output(args, "--out-jsonl", [&] {
    std::ostringstream text;
    const Json& p = report["pipeline"];
    write_convergence_jsonl(
        text, result, Json{{"experiment", report["experiment"]}, {"schedule", p["schedule"]}, {"stages", p["stages"]}});
    return text.str();
  });
  write_flag_output(args, "--svg", [&] { return convergence_svg(result, title); });
  write_flag_output(args, "--report", [&] { return dump(report); });
}

int run(const Args& args) {
  Experiment e = experiment_from_args(args, false);
  const ConvergenceSpec spec = convergence_of(args, e);
  RunLength length = run_length(args);
  AbstractPipeline pipeline;
  Json source;
  if (!e.pipeline.is_null()) {
    pipeline = parse_abstract_pipeline(e.pipeline);
    source = Json{{"method", "abstract pipeline: the experiment's \"pipeline\" section"}};
  } else {
    if (length.steps == 0 && length.budget_s == 0) length.steps = kDefaultModelSteps;
    DerivedPipeline derived = derive_pipeline(e);
    pipeline = derived.pipeline;
    source = derived.derivation;
  }
  const PreparedPipeline prepared = prepare_pipeline(pipeline, length);
  const ConvergenceResult result = run_convergence(prepared.trace, spec);
  Json report = converge_report(prepared, length, result);
  report["experiment"] = e.name;
  report["source"] = source;
  report["placesim_version"] = PLACESIM_VERSION;
  write_files(args, report, result, e.name + ": " + report["pipeline"]["schedule"].get<std::string>());
  summary_stream(args.value("--report").value_or(""))
      << converge_summary_text(report) << "  pipeline: " << source["method"].get<std::string>() << "\n";
  return 0;
}

}  // namespace

Command command_converge() {
  return command_from_help(kHelp, run, experiment_flags());
}

}  // namespace placesim
