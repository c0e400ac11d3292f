#include <algorithm>
#include <iostream>
#include <sstream>

#include "sim/cli/Commands.hpp"
#include "sim/converge/Converge.hpp"
#include "sim/converge/ConvergeModel.hpp"
#include "sim/converge/ConvergenceOutput.hpp"
#include "sim/converge/Minimum.hpp"
#include "sim/converge/Rpd.hpp"
#include "traces/report/Report.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
converge EXPERIMENT.json [--steps N | --time-budget S] [--step-size G] [--out-csv F] [--out-jsonl F] [--svg F]
  [--report F]
run stale SGD, its updates ordered as the experiment's pipeline schedule orders them, on the objective its
  "convergence" section chooses: quadratic (the default), logistic, least_squares, or char_lm (a character-level
  language model trained on a text)
--steps N                 steps to run (default: pipeline.steps; model experiments: 100)
--time-budget S           run for this much simulated time instead (seconds of the pipeline)
--step-size G             step size gamma (default: convergence.step_size)
--out-csv FILE            write the loss curve as CSV (updates,time_s,loss,grad_norm)
--out-jsonl FILE          write the loss curve as JSON lines
--svg FILE                write the loss against simulated time as SVG
--report FILE             write the JSON report ('-' for stdout; the summary then goes to stderr)
--rpd MODE                run Randomized PipeDream instead: uniform (stage sampled uniformly), backward (PipeDream's
                          backward order) with delays uniform on 0..--delta, or pipedream (the schedule's own order and
                          delays); prints the theory's bound beside the run
--delta D                 RPD's delay bound (default S^2 - S/2, PipeDream's steady-state maximum)
--iterations K            RPD's block updates (default: the schedule's Applies over the run)
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

// The Randomized PipeDream run the flags ask for on the prepared schedule: with --rpd=pipedream the schedule's own
// order and delays, else stages sampled uniformly or in the backward order with delays uniform on 0..--delta.
RpdSpec rpd_spec(const Args& args, const std::string& mode, const ConvergenceSpec& spec,
                 const PreparedPipeline& prepared) {
  RpdSpec rpd;
  rpd.stages = prepared.trace.stages;
  rpd.step_size = spec.step_size;
  rpd.seed = spec.objective.seed;
  std::int64_t applies = 0;
  for (const TrainEvent& ev : prepared.trace.events) applies += ev.kind == TrainEvent::Kind::Apply ? 1 : 0;
  const std::int64_t S = rpd.stages;
  rpd.delta = S * S - S / 2;
  if (auto v = integer_flag(args, "--delta", 0, 1000000000)) rpd.delta = *v;
  rpd.iterations = applies;
  if (auto v = integer_flag(args, "--iterations", 1, 1000000000)) rpd.iterations = *v;
  if (mode == "pipedream") {
    if (prepared.pipeline.shape.schedule != Schedule::PipeDream)
      throw InputError(
          "--rpd=pipedream takes PipeDream's order and delays from the schedule, but the experiment's "
          "schedule is " +
          to_string(prepared.pipeline.shape.schedule));
    if (args.has("--delta") || args.has("--iterations"))
      throw InputError("--rpd=pipedream takes its delays and iterations from the schedule: drop --delta/--iterations");
    rpd.exact = &prepared.trace;
    int last = -1;  // steady state from half the micro-batches on, as the pipeline report counts it
    for (const TrainEvent& ev : prepared.trace.events)
      if (ev.kind == TrainEvent::Kind::Backward) last = std::max(last, ev.microbatch);
    rpd.steady_from_microbatch = (last + 1) / 2;
  }
  rpd.sampling = mode == "backward" ? RpdSpec::Sampling::BackwardOrder : RpdSpec::Sampling::Uniform;
  return rpd;
}

// An RPD run and the theory's bound evaluated beside it.
struct RpdOutcome {
  RpdResult run;
  std::int64_t delta = 0;  // the bound's delay: --delta, or with the schedule's delays the largest it applied
  double f0 = 0;           // the initial loss
  bool convex = false;
  double fstar = 0;       // f*: a convex objective's minimum estimate; the others' losses are >= 0
  double smoothness = 0;  // L, a local estimate at x0
  RpdBound bound;
};

RpdOutcome run_with_bound(const RpdSpec& rpd, const Objective& objective, const ConvergenceSpec& spec,
                          const std::string& mode) {
  RpdOutcome o;
  o.run = run_rpd(rpd, objective);
  const RpdResult& r = o.run;
  o.delta = mode == "pipedream" ? r.delays.max : rpd.delta;
  std::vector<double> x0(static_cast<std::size_t>(objective.dimension()), 0.0);
  o.f0 = r.points.front().loss;
  o.convex = spec.objective.kind == ObjectiveKind::Quadratic || spec.objective.kind == ObjectiveKind::Logistic ||
             spec.objective.kind == ObjectiveKind::LeastSquares;
  o.fstar = o.convex ? estimate_minimum(objective, 20000, 1e-9).value : 0.0;
  o.smoothness = estimate_smoothness(objective, x0, rpd.seed);
  o.bound = rpd_bound(rpd.step_size, rpd.stages, r.iterations, o.delta, o.smoothness, r.second_moment, o.f0 - o.fstar);
  return o;
}

std::string rpd_summary(const std::string& mode, const RpdSpec& rpd, const Objective& objective, const RpdOutcome& o) {
  const RpdResult& r = o.run;
  const RpdBound& b = o.bound;
  std::ostringstream text;
  text.precision(4);
  text << "placesim converge --rpd=" << mode << ": S=" << rpd.stages << ", K=" << r.iterations << " block updates, "
       << (mode == "pipedream"
               ? "PipeDream's order and delays from the schedule"
               : std::string(mode == "uniform" ? "stages sampled uniformly" : "PipeDream's backward order") +
                     ", delays uniform on 0.." + std::to_string(rpd.delta))
       << "; " << objective.name() << ", d=" << objective.dimension() << ", step size " << rpd.step_size << "\n";
  text << "  loss " << o.f0 << " -> " << r.points.back().loss << (r.diverged ? " (diverged)" : "")
       << "; mean ||grad f(x_k)||^2 over " << r.points.size() - 1 << " sampled iterates: " << r.mean_squared_gradient
       << "\n";
  text << "  delays of the active block: max " << r.delays.max << ", mean " << r.delays.mean << "\n";
  text << "  bound (Ilin & Richtarik, arXiv 2606.03498, as their code evaluates it): 2S(f0-f*)/(gK) " << b.descent
       << " + gSLG^2 " << b.noise << " + g^2L^2delta^2G^2 " << b.stale << " = " << b.total()
       << (r.mean_squared_gradient <= b.total() ? " >= " : " < ") << "measured " << r.mean_squared_gradient << "\n";
  text << "    with L " << o.smoothness << " (local estimate at x0), G^2 " << r.second_moment
       << " (largest sampled block gradient), "
       << "f0-f* " << o.f0 - o.fstar << (o.convex ? "" : " (f* >= 0)") << ", delta " << o.delta << "\n";
  text << "  tuned step g* = sqrt(2(f0-f*)/(L G^2 K)) = " << b.tuned_step << ": 2S sqrt(2L(f0-f*)G^2/K) "
       << b.tuned_main << " + stale read 2L(f0-f*)delta^2/K " << b.tuned_stale
       << " (Theta(S^4/K)) = " << b.tuned_total() << "\n";
  return text.str();
}

Json rpd_report(const Experiment& e, const std::string& mode, const RpdSpec& rpd, const RpdOutcome& o) {
  const RpdResult& r = o.run;
  const RpdBound& b = o.bound;
  Json report = {{"experiment", e.name},
                 {"placesim_version", PLACESIM_VERSION},
                 {"rpd",
                  {{"mode", mode},
                   {"stages", rpd.stages},
                   {"iterations", r.iterations},
                   {"delta", o.delta},
                   {"step_size", rpd.step_size},
                   {"initial_loss", o.f0},
                   {"final_loss", r.points.back().loss},
                   {"diverged", r.diverged},
                   {"mean_squared_gradient", r.mean_squared_gradient},
                   {"max_delay", r.delays.max},
                   {"mean_delay", r.delays.mean}}},
                 {"bound",
                  {{"smoothness", o.smoothness},
                   {"second_moment", r.second_moment},
                   {"gap", o.f0 - o.fstar},
                   {"descent", b.descent},
                   {"noise", b.noise},
                   {"stale_read", b.stale},
                   {"total", b.total()},
                   {"tuned_step", b.tuned_step},
                   {"tuned_main", b.tuned_main},
                   {"tuned_stale_read", b.tuned_stale},
                   {"tuned_total", b.tuned_total()}}}};
  Json histogram = Json::array();
  for (const auto& [delay, count] : r.histogram) histogram.push_back(Json{{"delay", delay}, {"count", count}});
  report["rpd"]["histogram"] = histogram;
  return report;
}

// Randomized PipeDream on the experiment's objective: the run, the delays it applied and the bound beside it.
int run_rpd_mode(const Args& args, const Experiment& e, const ConvergenceSpec& spec, const PreparedPipeline& prepared) {
  const std::string mode = *args.value("--rpd");
  if (mode != "uniform" && mode != "backward" && mode != "pipedream")
    throw InputError("--rpd=" + mode + " is not one of: uniform backward pipedream");
  const auto objective = make_objective(spec.objective);
  const RpdSpec rpd = rpd_spec(args, mode, spec, prepared);
  const RpdOutcome outcome = run_with_bound(rpd, *objective, spec, mode);
  const Json report = rpd_report(e, mode, rpd, outcome);
  write_flag_output(args, "--report", [&] { return dump(report); });
  summary_stream(args.value("--report").value_or("")) << rpd_summary(mode, rpd, *objective, outcome);
  return 0;
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
  if (args.has("--rpd")) return run_rpd_mode(args, e, spec, prepared);
  for (const char* flag : {"--delta", "--iterations"})
    if (args.has(flag)) throw InputError(std::string(flag) + " is an option of --rpd");
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
