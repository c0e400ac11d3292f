#include "sim/converge/Converge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/converge/ConvergenceOutput.hpp"
#include "sim/converge/UpdateDelays.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

struct Evaluated {
  PipelineSchedule schedule;
  PipelineTimeline timeline;
};

Evaluated evaluate(const AbstractPipeline& p) {
  Evaluated e{make_schedule(p.shape, abstract_shape_fields()), {}};
  e.timeline = evaluate_pipeline(e.schedule, p.times);
  return e;
}

double makespan_of(const PipelineTimeline& timeline) {
  double end = 0;
  for (const auto& stage : timeline)
    for (const OpInterval& x : stage) end = std::max(end, x.end_s);
  return end;
}

double last_forward_start(const Evaluated& e) {
  double start = 0;
  for (std::size_t i = 0; i < e.schedule.order[0].size(); ++i)
    if (e.schedule.order[0][i].kind == PipeOpKind::Forward) start = std::max(start, e.timeline[0][i].start_s);
  return start;
}

Json times_json(const PipelineTimes& t) {
  return Json{{"forward_s", t.forward_s},
              {"backward_s", t.backward_s},
              {"p2p_s", t.p2p_s},
              {"apply_s", t.apply_s},
              {"average_s", t.average_s}};
}

// Half of the micro-batches whose backward the trace holds: the start of its steady state, as the report takes it.
int steady_from(const UpdateLog& trace) {
  int last = -1;
  for (const TrainEvent& e : trace.events)
    if (e.kind == TrainEvent::Kind::Backward) last = std::max(last, e.microbatch);
  return (last + 1) / 2;
}

// Staleness in optimizer steps: a synchronous schedule (GPipe, 1F1B, interleaved) applies every gradient of a step to
// the weights its forward read, so it is plain SGD with staleness 0 whatever the block-update count between the read
// and the apply (its other stages' updates of the same step); asynchronous schedules' staleness is that count. The
// count itself is kept under its own name, block_updates_between, as in the pipeline section.
Json delays_json(const UpdateDelays& d, bool synchronous) {
  auto histogram = [](const std::map<std::int64_t, std::int64_t>& counts, const char* key) {
    Json list = Json::array();
    for (const auto& [value, count] : counts) list.push_back(Json{{key, value}, {"count", count}});
    return list;
  };
  UpdateDelays stale = d;
  if (synchronous) {
    stale.steady = {0, 0, d.steady.samples};
    stale.whole_run = {0, 0, d.whole_run.samples};
    stale.histogram.clear();
    if (d.steady.samples > 0) stale.histogram[0] = d.steady.samples;
  }
  return Json{{"max_delay", stale.steady.max},
              {"mean_delay", stale.steady.mean},
              {"samples", stale.steady.samples},
              {"histogram", histogram(stale.histogram, "delay")},
              {"whole_run", {{"max", stale.whole_run.max}, {"mean", stale.whole_run.mean}}},
              {"block_updates_between",
               {{"max", d.steady.max},
                {"mean", d.steady.mean},
                {"histogram", histogram(d.histogram, "updates")},
                {"whole_run", {{"max", d.whole_run.max}, {"mean", d.whole_run.mean}}}}}};
}

}  // namespace

int steps_for_budget(const AbstractPipeline& p, double budget_s) {
  AbstractPipeline run = p;
  run.shape.steps = 1;
  for (;;) {
    Evaluated e;
    try {
      e = evaluate(run);
    } catch (const InputError& error) {
      throw InputError("--time-budget=" + format_shortest(budget_s) + " needs more than " +
                       std::to_string(run.shape.steps) + " steps: " + error.what());
    }
    const double last_start = last_forward_start(e);
    if (last_start >= budget_s) return run.shape.steps;
    // A step moves stage 0's last forward by about makespan / steps: add the steps that cover the shortfall.
    const double per_step = makespan_of(e.timeline) / run.shape.steps;
    const double wanted = run.shape.steps + std::ceil((budget_s - last_start) / per_step);
    run.shape.steps = static_cast<int>(std::min<double>(std::max<double>(run.shape.steps + 1, wanted), 1e9));
  }
}

UpdateLog cut_log(const UpdateLog& trace, double budget_s) {
  UpdateLog cut;
  cut.stages = trace.stages;
  cut.replicas = trace.replicas;
  for (const TrainEvent& e : trace.events)
    if (e.time_s <= budget_s) cut.events.push_back(e);
  return cut;
}

PreparedPipeline prepare_pipeline(AbstractPipeline p, const RunLength& length) {
  if (length.budget_s > 0) {
    p.shape.steps = steps_for_budget(p, length.budget_s);
  } else if (length.steps > 0) {
    p.shape.steps = length.steps;
  }
  const Evaluated e = evaluate(p);
  PreparedPipeline out;
  out.pipeline = p;
  out.pipeline_report = pipeline_json(measure_pipeline(e.schedule, e.timeline));
  out.pipeline_report["times"] = times_json(p.times);
  out.trace = update_log(e.schedule, e.timeline);
  out.end_s = makespan_of(e.timeline);
  if (length.budget_s > 0) {
    out.trace = cut_log(out.trace, length.budget_s);
    out.end_s = length.budget_s;
  }
  return out;
}

Json converge_report(const PreparedPipeline& prepared, const RunLength& length, const ConvergenceResult& result) {
  return Json{{"pipeline", prepared.pipeline_report},
              {"convergence", convergence_summary(result)},
              {"executed_staleness", delays_json(update_delays(prepared.trace, steady_from(prepared.trace)),
                                                 synchronous_schedule(prepared.pipeline.shape.schedule))},
              {"run",
               {{"steps", prepared.pipeline.shape.steps},
                {"budget_s", length.budget_s > 0 ? Json(length.budget_s) : Json(nullptr)},
                {"end_s", prepared.end_s},
                {"events", prepared.trace.events.size()}}}};
}

std::string converge_summary_text(const Json& report) {
  const Json& p = report["pipeline"];
  const Json& c = report["convergence"];
  const Json& run = report["run"];
  auto number = [](const Json& v) { return v.is_null() ? std::string("n/a") : format_shortest(v.get<double>()); };
  char line[512];
  std::snprintf(line, sizeof line, "placesim converge: %s, S=%d, M=%d, %d step(s)%s; %s, d=%d, step size %s\n",
                p["schedule"].get<std::string>().c_str(), p["stages"].get<int>(), p["microbatches"].get<int>(),
                run["steps"].get<int>(),
                run["budget_s"].is_null() ? "" : (", cut at " + number(run["budget_s"]) + " s").c_str(),
                c["objective"].get<std::string>().c_str(), c["dimension"].get<int>(), number(c["step_size"]).c_str());
  std::string out = line;
  std::snprintf(line, sizeof line,
                "  final loss %s (best %s, initial %s) after %lld updates at simulated time %s s%s\n"
                "  staleness (steady state): max delay %lld, mean delay %.4g\n",
                number(c["final_loss"]).c_str(), number(c["min_loss"]).c_str(), number(c["initial_loss"]).c_str(),
                static_cast<long long>(c["updates"].get<std::int64_t>()), number(c["final_time_s"]).c_str(),
                c["diverged"].get<bool>() ? " - DIVERGED" : "",
                static_cast<long long>(p["staleness"]["max_delay"].get<std::int64_t>()),
                p["staleness"]["mean_delay"].get<double>());
  return out + line;
}

}  // namespace placesim
