#pragma once
#include <vector>

#include "strategies/graph/Record.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/pipeline/UpdateLog.hpp"

namespace placesim {

/// When one op of a schedule ran, in seconds.
struct OpInterval {
  double start_s = 0, end_s = 0;
};

/// When every op ran: timeline[stage][i] belongs to schedule.order[stage][i].
using PipelineTimeline = std::vector<std::vector<OpInterval>>;

/// Where an op sits: schedule.order[stage][index].
struct OpId {
  int stage = 0;
  int index = 0;
};

/// Recovers the timeline of `schedule` from the records of one pipeline (an evaluated abstract pipeline, or the
/// records of one representative pipeline of a simulation). Records are matched to ops by their fields; several
/// records of one op (one per layer group, say) merge into their first start and last end:
///   - forward/backward/weight gradient: TaskKind::Forward / Backward / WeightGrad with stage, microbatch and chunk
///     (chunk -1 counts as 0);
///   - Apply: TaskKind::Optimizer with stage and microbatch = the micro-batch of the backward it follows;
///   - Average: TaskKind::Collective of class DpGradSync with stage and microbatch = the round's last micro-batch.
/// Records with a negative stage or micro-batch, and all other kinds, are not ops of the schedule and are skipped.
/// A DualPipe pair (PipeOp::pairs_next) whose two ops overlapped is one interval, split between its forward and its
/// backward in proportion to their compute, so that no time counts twice.
/// Throws std::invalid_argument when an op has no record or a record names a stage, micro-batch or chunk the schedule
/// does not have.
PipelineTimeline pipeline_timeline(const PipelineSchedule& schedule, const SimulationRecord& record);

/// Every op in completion order: by end time, then stage, then position on the stage. Ops that depend on each other
/// across stages never end at the same time (forward and backward times are positive), so this order is causal.
std::vector<OpId> completion_order(const PipelineSchedule& schedule, const PipelineTimeline& timeline);

/// What the run did to the weights, in completion order: one Backward event per stage and micro-batch, at the last
/// of its chunks' backward ops (versions_read: the version each stage's forward of that micro-batch read), one Apply
/// event per Apply op, one Average event per Average op (replica 0).
UpdateLog update_log(const PipelineSchedule& schedule, const PipelineTimeline& timeline);

}  // namespace placesim
