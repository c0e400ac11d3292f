#include "strategies/pipeline/AbstractPipeline.hpp"

#include <algorithm>
#include <climits>

#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"

namespace placesim {

namespace {

Schedule read_schedule(ObjectReader& r) {
  std::vector<std::string> names;
  for (Schedule s : all_schedules()) names.push_back(to_string(s));
  return schedule_named(r.get_choice("schedule", names, to_string(Schedule::OneFOneB)));
}

// Keys that belong to one schedule only are refused with the others, so a typo'd schedule cannot ignore them.
void refuse_unless(ObjectReader& r, const char* key, bool meaningful, const std::string& schedules) {
  if (r.has(key) && !meaningful)
    throw InputError(r.field(key) + " is only meaningful with " + r.field("schedule") + "=" + schedules);
}

// A pass time (`pass`: at least kMinPassSeconds, required) or another op's (0 allowed), at most kMaxOpSeconds.
double op_seconds(ObjectReader& r, const char* key, bool pass) {
  const double s = pass ? r.require_positive(key) : r.get_non_negative(key, 0);
  r.check(s <= kMaxOpSeconds, key, "is more than the 1e+06 s (11.6 days) an op of an abstract pipeline may take");
  if (pass) r.check(s >= kMinPassSeconds, key, "is less than the 1e-09 s (a nanosecond) a pass takes at least");
  return s;
}

}  // namespace

AbstractPipeline parse_abstract_pipeline(const Json& section) {
  ObjectReader r(section, "pipeline");
  AbstractPipeline p;
  PipelineShape& sh = p.shape;
  sh.schedule = read_schedule(r);
  sh.stages = r.require_int_in("stages", 1);
  sh.microbatches = r.require_int_in("microbatches", 1);
  sh.steps = r.get_int_in("steps", 1, 1);
  p.times.forward_s = op_seconds(r, "forward_s", true);
  p.times.backward_s = op_seconds(r, "backward_s", true);
  p.times.p2p_s = op_seconds(r, "p2p_s", false);
  p.times.apply_s = op_seconds(r, "apply_s", false);
  refuse_unless(r, "weight_s", splits_backward(sh.schedule),
                "zb-h1, zb-h2, zb-v, dualpipev, interleaved-zb or dualpipe");
  // The weight gradient's share of a backward: half by default, as a linear layer's two gradient GEMMs (input and
  // weight) take equal FLOPs (the zero-bubble paper's T_B = T_W).
  if (splits_backward(sh.schedule)) {
    p.times.weight_s = r.has("weight_s") ? op_seconds(r, "weight_s", true) : p.times.backward_s / 2;
    r.check(p.times.weight_s < p.times.backward_s, "weight_s",
            "must be less than pipeline.backward_s (the weight gradient is a part of the backward)");
  }
  const bool asynchronous = sh.schedule == Schedule::PipeDream || sh.schedule == Schedule::PipeDream2BW;
  const bool local_sgd = sh.schedule == Schedule::LocalSGD;
  refuse_unless(r, "chunks", interleaves_chunks(sh.schedule), "interleaved or interleaved-zb");
  refuse_unless(r, "microbatch_group", sh.schedule == Schedule::Interleaved, "interleaved");
  refuse_unless(r, "noam", asynchronous, "pipedream or pipedream-2bw");
  for (const char* key : {"replicas", "local_steps", "average_s"}) refuse_unless(r, key, local_sgd, "localsgd");
  // Interleaved without chunks would be 1F1B under another name: 2 chunks, as pipeline-sweep.
  sh.chunks = r.get_int_in("chunks", interleaves_chunks(sh.schedule) ? 2 : 1, 1);
  // Their V places two chunks on every stage; DualPipe one per direction.
  if (v_shaped(sh.schedule) || bidirectional(sh.schedule)) sh.chunks = 2;
  sh.microbatch_group = r.get_int_in("microbatch_group", 0, 1);
  sh.noam = r.get_int_in("noam", sh.stages, 1);
  sh.replicas = r.get_int_in("replicas", 1, 1);
  sh.local_steps = r.get_int_in("local_steps", 1, 1);
  p.times.average_s = op_seconds(r, "average_s", false);
  r.finish();
  return p;
}

Json simulate_abstract_pipeline(const Json& section, SimulationRecord* record_out, UpdateLog* trace_out) {
  const AbstractPipeline p = parse_abstract_pipeline(section);
  const PipelineSchedule schedule = make_schedule(p.shape, abstract_shape_fields());
  const PipelineTimeline timeline = evaluate_pipeline(schedule, p.times);
  Json pipeline = pipeline_json(measure_pipeline(schedule, timeline));
  pipeline["times"] = Json{{"forward_s", p.times.forward_s},
                           {"backward_s", p.times.backward_s},
                           {"p2p_s", p.times.p2p_s},
                           {"apply_s", p.times.apply_s},
                           {"average_s", p.times.average_s}};
  if (splits_backward(p.shape.schedule)) pipeline["times"]["weight_s"] = p.times.weight_s;
  double makespan = 0;
  for (const auto& stage : timeline)
    for (const OpInterval& x : stage) makespan = std::max(makespan, x.end_s);
  const int total = p.shape.total_microbatches();
  Json report{{"pipeline", std::move(pipeline)},
              {"simulation",
               {{"step_time_s", makespan / p.shape.steps},
                {"makespan_s", makespan},
                {"microbatches", total},
                {"throughput_microbatches_per_s", makespan > 0 ? total / makespan : 0}}}};
  if (record_out) *record_out = pipeline_record(schedule, timeline, p.times);
  if (trace_out) *trace_out = update_log(schedule, timeline);
  return report;
}

}  // namespace placesim
