#pragma once
#include <string>
#include <vector>

#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"

namespace placesim::test {

/// DualPipe's op orders: "F5.1" the forward of micro-batch 5 through chunk 1, "+" a pair overlapped with the next op,
/// "BW" a backward that computes its weight gradient too, "B" a split one whose "W" comes later, "A" the Apply.
inline std::string render_paired(const std::vector<PipeOp>& ops) {
  std::string out;
  for (const PipeOp& op : ops) {
    if (!out.empty()) out += " ";
    if (op.kind == PipeOpKind::Apply) {
      out += "A";
      continue;
    }
    out += op.kind == PipeOpKind::Forward ? "F" : op.kind == PipeOpKind::Weight ? "W" : op.split ? "B" : "BW";
    out += std::to_string(op.microbatch) + "." + std::to_string(op.chunk) + (op.pairs_next ? "+" : "");
  }
  return out;
}

inline PipelineShape pipeline_shape(Schedule schedule, int stages, int microbatches, int steps = 1) {
  PipelineShape sh;
  sh.schedule = schedule;
  sh.stages = stages;
  sh.microbatches = microbatches;
  sh.steps = steps;
  sh.noam = stages;
  // Their V places two chunks on every stage.
  if (v_shaped(schedule)) sh.chunks = 2;
  return sh;
}

inline PipelineTimes pipeline_times(double forward_s, double backward_s, double p2p_s = 0) {
  PipelineTimes t;
  t.forward_s = forward_s;
  t.backward_s = backward_s;
  t.p2p_s = p2p_s;
  return t;
}

/// A schedule, its evaluated timeline and its metrics.
struct PipelineRun {
  PipelineSchedule schedule;
  PipelineTimeline timeline;
  PipelineMetrics metrics;
};

inline PipelineRun run_pipeline(const PipelineShape& shape, const PipelineTimes& times) {
  PipelineRun r;
  r.schedule = make_schedule(shape, abstract_shape_fields());
  r.timeline = evaluate_pipeline(r.schedule, times);
  r.metrics = measure_pipeline(r.schedule, r.timeline);
  return r;
}

}  // namespace placesim::test
