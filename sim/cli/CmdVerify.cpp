#include <cstdio>
#include <iostream>

#include "sim/cli/Commands.hpp"
#include "sim/verify/Verify.hpp"
#include "strategies/analytic/Validity.hpp"
#include "traces/report/Report.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kVerifyHelp = R"(
verify EXPERIMENT.json [--out FILE]
run the training step numerically under the placement on a miniature mesh and compare with one device: exit 0 same model, 2 invalid (it diverges), 3 valid but asynchronous (it differs by the predicted staleness), 4 checker and execution disagree
--out FILE                write the verdict as JSON
)";

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

std::string traffic_line(const ExecutedTraffic& run, const ExecutedTraffic& analytic) {
  auto pair = [](const char* what, double a, double b) {
    return std::string(what) + " " + number(a) + (a == b ? " = " : " != ") + number(b);
  };
  return pair("parameter all-gathers", run.gather, analytic.gather) + ", " +
         pair("gradient sync", run.grad_sync, analytic.grad_sync) + ", " + pair("host in", run.h2d, analytic.h2d) +
         ", " + pair("host out", run.d2h, analytic.d2h);
}

bool same_traffic(const ExecutedTraffic& a, const ExecutedTraffic& b) {
  return a.gather == b.gather && a.grad_sync == b.grad_sync && a.h2d == b.h2d && a.d2h == b.d2h;
}

// The experiment, the miniature it is run as and what was changed to get there.
void print_miniature(std::ostream& out, const Experiment& e, const Miniature& mini) {
  const ExecutorSpec& x = mini.spec;
  const StrategySpec& s = x.strategy;
  out << "verify: " << e.name << ": " << e.model.name << " with " << e.strategy.preset << " "
      << short_form(e.strategy.placement) << " on " << mesh_string(e.strategy) << ", schedule "
      << to_string(e.strategy.schedule) << "\n";
  out << "miniature: tiny MLP of " << x.layers << " layers (5x5 weights + bias, tanh, fp64), dp_shard " << s.dp_shard
      << " x dp_replicate " << s.dp_replicate << " x pp " << s.pp
      << (chunks_per_stage(s) > 1 ? " x " + std::to_string(s.chunks) + " chunks" : "") << ", " << s.microbatches
      << " micro-batches of 2 samples per data rank, " << x.steps << " steps, "
      << (x.strategy.schedule == Schedule::PipeDream || x.strategy.schedule == Schedule::PipeDream2BW ||
                  x.strategy.schedule == Schedule::LocalSGD
              ? "SGD step " + number(x.step_size)
              : "SGD step " + number(x.step_size) + " momentum " + number(x.momentum))
      << "\n";
  for (const std::string& c : mini.changes) out << "  " << c << "\n";
}

Json miniature_json(const Miniature& mini) {
  const ExecutorSpec& x = mini.spec;
  const StrategySpec& s = x.strategy;
  return {{"layers", x.layers}, {"dp_shard", s.dp_shard},   {"dp_replicate", s.dp_replicate},
          {"pp", s.pp},         {"chunks", s.chunks},       {"microbatches", s.microbatches},
          {"steps", x.steps},   {"tolerance", x.tolerance}, {"changes", mini.changes}};
}

// The largest deviations of the run from one device (asynchronous: also from the stale replay of its delays),
// printed and returned as the report's "execution".
Json print_deviation(std::ostream& out, const ExecutorSpec& x, const ExecutorResult& r) {
  Json deviation = Json::object();
  if (r.asynchronous) {
    out << "execution against one device (plain mini-batch SGD over the same micro-batches): parameters differ by up "
           "to "
        << number(r.max_deviation[2]) << " after " << x.steps << " steps\n";
    out << "execution against the stale replay of the schedule's delays (max " << r.max_delay << ", mean "
        << number(r.mean_delay)
        << " block updates between a gradient's read and its apply in the run, counted as the pipeline report "
        << "counts them): " << number(r.stale_replay_deviation) << " (tolerance " << number(x.tolerance) << ")\n";
    deviation["parameters_vs_one_device"] = r.max_deviation[2];
    deviation["parameters_vs_stale_replay"] = r.stale_replay_deviation;
  } else {
    out << "execution against one device (tolerance " << number(x.tolerance)
        << " per element; every copy each device and host keeps, and every gradient an optimizer applied):\n";
    for (std::size_t k = 0; k < kExecutedStates.size(); ++k) {
      out << "  " << kExecutedStates[k] << std::string(12 - std::string(kExecutedStates[k]).size(), ' ')
          << "largest |executed - one device| " << number(r.max_deviation[k]) << "\n";
      deviation[kExecutedStates[k]] = r.max_deviation[k];
    }
    if (r.diverged)
      out << "  first divergence: " << kExecutedStates[static_cast<std::size_t>(r.first_state)] << " in step "
          << r.first_step << "\n";
  }
  Json execution = {{"executed", true}, {"diverged", r.diverged}, {"deviation", deviation}};
  if (r.diverged && !r.asynchronous)
    execution["first_divergence"] = {{"state", kExecutedStates[static_cast<std::size_t>(r.first_state)]},
                                     {"step", r.first_step}};
  return execution;
}

// The elements each stage moved per step, executed against analytic, printed and set as the report's "traffic";
// false when a stage's differ.
bool print_traffic(std::ostream& out, const ExecutorSpec& x, const ExecutorResult& r, Json& report) {
  const std::vector<ExecutedTraffic> analytic = analytic_traffic(miniature_experiment(x));
  out << "elements moved per step by one device, executed vs analytic:\n";
  bool traffic_ok = true;
  Json rows = Json::array();
  for (std::size_t st = 0; st < analytic.size(); ++st) {
    out << "  stage " << st << ": " << traffic_line(r.traffic[st], analytic[st]) << "\n";
    traffic_ok = traffic_ok && same_traffic(r.traffic[st], analytic[st]);
    rows.push_back({{"stage", st},
                    {"gather", r.traffic[st].gather},
                    {"grad_sync", r.traffic[st].grad_sync},
                    {"h2d", r.traffic[st].h2d},
                    {"d2h", r.traffic[st].d2h},
                    {"analytic_gather", analytic[st].gather},
                    {"analytic_grad_sync", analytic[st].grad_sync},
                    {"analytic_h2d", analytic[st].h2d},
                    {"analytic_d2h", analytic[st].d2h}});
  }
  report["traffic"] = rows;
  return traffic_ok;
}

// The verdict line and the exit code the help names.
struct Verdict {
  std::string text;
  int code = 0;
};

Verdict executed_verdict(const Judgement& j, bool traffic_ok) {
  if (!j.agree)
    return {"DISAGREEMENT: the checker says " + std::string(j.checker_valid ? "valid" : "invalid") +
                " but the execution " + (j.result.diverged ? "diverges" : "equals one device") +
                " (a placesim bug: please report it)",
            4};
  if (!traffic_ok) return {"DISAGREEMENT: the executed traffic differs from the analytic volumes (a placesim bug)", 4};
  if (!j.checker_valid)
    return {"invalid strategy: it trains a different model, as the checker says (rule " + j.rule + ")", 2};
  if (!j.equivalent)
    return {
        "valid, but does not train the same model as one device (asynchronous): its run is exactly the stale "
        "updates the pipeline report's delays describe",
        3};
  return {"trains the same model as one device; checker and execution agree", 0};
}

// The execution's deviations and traffic, printed and added to the report, and the verdict they give.
Verdict report_execution(std::ostream& out, const ExecutorSpec& x, const Judgement& j, Json& report) {
  if (!j.executed) {
    out << "execution: not run: " << j.not_executed << "\n";
    report["execution"] = {{"executed", false}, {"reason", j.not_executed}};
    if (j.not_executed.rfind("not modelled", 0) == 0)  // no verdict on the strategy: placesim cannot run it here
      return {"not verified: placesim does not model this strategy on a model (not executed)", 1};
    return {j.checker_valid ? "not verified: the executor cannot run this strategy" : "invalid strategy (not executed)",
            2};
  }
  const ExecutorResult& r = j.result;
  report["execution"] = print_deviation(out, x, r);
  bool traffic_ok = true;
  if (!r.asynchronous && !j.checker_valid)
    out << "traffic: not compared with the analytic volumes (the placement is invalid)\n";
  else if (!r.asynchronous)
    traffic_ok = print_traffic(out, x, r, report);
  return executed_verdict(j, traffic_ok);
}

int run_verify(const Args& args) {
  const Experiment e = experiment_from_args(args, false);
  refuse_abstract_pipeline(e, "verify", "a placement to execute (converge runs an abstract pipeline's schedule)");
  const Miniature mini = miniature_of(e);
  std::ostream& out = std::cout;
  print_miniature(out, e, mini);
  const Judgement j = judge(mini.spec);
  Json report = {{"experiment", e.name},
                 {"miniature", miniature_json(mini)},
                 {"checker", {{"valid", j.checker_valid}, {"message", j.checker_message}, {"rule", j.rule}}}};
  out << "checker: " << (j.checker_valid ? "valid" : j.checker_message) << "\n";
  const Verdict verdict = report_execution(out, mini.spec, j, report);
  out << "verdict: " << verdict.text << "\n";
  report["verdict"] = verdict.text;
  report["agree"] = j.agree;
  report["exit_code"] = verdict.code;
  report["placesim_version"] = PLACESIM_VERSION;
  write_flag_output(args, "--out", [&] { return dump(report); });
  return verdict.code;
}

}  // namespace

Command command_verify() {
  return command_from_help(kVerifyHelp, run_verify, experiment_flags());
}

}  // namespace placesim
