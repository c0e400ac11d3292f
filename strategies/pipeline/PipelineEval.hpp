#pragma once
#include "strategies/graph/Record.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"

namespace placesim {

/// Op durations of an abstract pipeline, in seconds: uniform stages, or one duration per virtual stage.
struct PipelineTimes {
  double forward_s = 1;   ///< forward of one micro-batch through a whole stage; an interleaved chunk takes 1/v of it
  double backward_s = 1;  ///< backward of one micro-batch through a whole stage; a chunk takes 1/v of it
  /// The weight-gradient part of backward_s, for schedules that split the backward (zb-h1, zb-h2): their B takes
  /// backward_s - weight_s and their W weight_s (uneven stages: the same fraction of each virtual stage's backward).
  double weight_s = 0;
  double p2p_s = 0;      ///< one activation or gradient transfer between two stages
  double apply_s = 0;    ///< one weight update of a stage
  double average_s = 0;  ///< one LocalSGD averaging of a stage's replicas
  /// Uneven stages: when not empty, the forward (backward) of one micro-batch through virtual stage k takes
  /// forward_by_virtual_stage[k] (backward_by_virtual_stage[k]) instead of the uniform share above.
  std::vector<double> forward_by_virtual_stage, backward_by_virtual_stage;
};

/// Exact start and end of every op of `schedule` (pure; O(ops)). One compute stream per stage runs its ops in the
/// schedule's order, each as soon as the stream is free and its inputs are there. A transfer between two stages is a
/// fixed delay of p2p_s from the end of its producer; transfers do not contend with each other. The run starts at 0.
/// Throws std::logic_error if the orders deadlock (no schedule of make_schedule does).
PipelineTimeline evaluate_pipeline(const PipelineSchedule& schedule, const PipelineTimes& times);

/// The span of a timeline (first start to last end; 0 when empty) and each stage's idle time in it.
struct TimelineIdle {
  double span_s = 0;
  std::vector<double> idle_s;  ///< per stage: span - the stage's busy time
  double fraction(std::size_t stage) const { return span_s > 0 ? idle_s[stage] / span_s : 0; }
};
TimelineIdle timeline_idle(const PipelineTimeline& timeline);

/// The records of an evaluated pipeline, as a simulation would give them, for the trace writer and the report.
///
/// One device per stage (node = pp = stage). One TaskRecord per op on Stream::Compute: task id = the op's position
/// over the stages' orders (stage 0's ops first), Forward/Backward, Apply = TaskKind::Optimizer, Average =
/// TaskKind::Collective of class DpGradSync (algorithm "average"); stage, microbatch, chunk and weight_version as in
/// the PipeOp. Per transfer, a PpSend record on the sender and a PpRecv record on the receiver sharing one task id,
/// kind P2P, class PpP2P, `peer` = the other end. Since transfers do not contend, the pp-recv records of a device
/// can overlap in time when p2p_s > 0 (its pp-send records cannot while p2p_s <= the shortest forward or backward).
/// Tasks are in completion order (end, device, stream, id); step_time_s = makespan / steps.
SimulationRecord pipeline_record(const PipelineSchedule& schedule, const PipelineTimeline& timeline,
                                 const PipelineTimes& times);

}  // namespace placesim
