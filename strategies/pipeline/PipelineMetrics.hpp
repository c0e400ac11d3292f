#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "strategies/pipeline/PipelineTimeline.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// Maximum and mean of integer samples (0 and 0 when there are none).
struct DelayStats {
  std::int64_t max = 0;
  double mean = 0;
  std::int64_t samples = 0;
};

/// Accumulates delays into their max, mean and count.
class DelayTally {
 public:
  void add(std::int64_t v) {
    max_ = count_ == 0 ? v : std::max(max_, v);
    sum_ += static_cast<double>(v);
    ++count_;
  }
  DelayStats stats() const { return {max_, count_ == 0 ? 0 : sum_ / static_cast<double>(count_), count_}; }

 private:
  std::int64_t max_ = 0, count_ = 0;
  double sum_ = 0;
};

/// The report's `pipeline` section.
///
/// Idle time: span = from the first start to the last end of any compute op or compute-stream record of the
/// pipeline (the whole run given); busy_s[s] = length of the union of stage s's ops or compute-stream records
/// (forward, backward, recompute, Apply, Average); idle_s[s] = span - busy_s[s]; idle_fraction[s] = idle_s[s] / span.
/// This is all the idle time of the stage, whatever its cause (it was reported as `bubble_fraction` before, which it
/// is only with uniform stages, free transfers and free updates).
///
/// Schedule bubble: the idle time the schedule itself forces. The schedule is re-timed with zero communication
/// (p2p_s = 0), free Apply and Average ops and balanced stages: every forward takes the mean measured forward op
/// (first start to last end of its compute records, a backward's recompute included, and the tensor-parallel
/// collectives it issues) of the whole pipeline, every backward the mean measured backward op. schedule_bubble_s[s] =
/// span - busy of stage s in that re-timed run; schedule_bubble_fraction[s] = schedule_bubble_s[s] / its span:
/// (p-1)/(m+p-1) for GPipe and 1F1B whatever the measured times, as the schedule's own property.
///
/// Idle causes, per stage, in seconds of the measured run; busy_s + the five = span (the last one is the remainder):
///   - warmup_s: idle before the first forward or backward op of any stage starts;
///   - optimizer_and_step_end_s: idle after the last forward or backward op of any stage ends (waiting on the other
///     stages' optimizer and the end of the step);
///   - exposed_communication_s: idle inside the stage's own forward and backward ops, which end with their last
///     tensor-parallel collective (the compute stream waits on a collective, TP all-reduce say, the op cannot
///     overlap; 0 in an abstract pipeline);
///   - schedule_bubble_s: as above;
///   - imbalance_and_waiting_s: the rest: stage imbalance, waiting on pipeline transfers, in-run optimizer steps of
///     earlier steps. Negative on a stage slower than the mean (it idles less than the balanced schedule forces).
///
/// Staleness: the number of optimizer steps the weights a backward's gradient is applied to are ahead of the weights
/// its forward read. Synchronous schedules (gpipe, 1f1b, interleaved: a flush and one Apply per stage per step) are
/// exact SGD: the forward of every micro-batch of a step reads the weights its gradient is applied to (measuring
/// checks it on every stage: the version the backward read is the version its Apply replaces), so their staleness is
/// 0. For the asynchronous schedules (pipedream, pipedream-2bw) and localsgd it is the block-update count below.
///
/// Block updates between (Ilin & Richtarik, arXiv 2606.03498, who call it the delay), per replica: a block update
/// is an Apply op. Every backward op's gradient is applied by the next Apply on its stage; k = the number of the
/// replica's updates completed before that Apply (completion order: end time, then stage, then position), j = the
/// number of the replica's updates that ended no later than the start of the forward of the same micro-batch and
/// chunk on the same stage; the count is k - j. Under PipeDream, where an Apply follows every backward, k and j count
/// backward ops, as DESIGN §5 states. Under a synchronous schedule it counts the other stages' Applies of the same
/// step, which together make one SGD step. Steady state = micro-batches from total/2 on (the second half of the run).
///
/// Version lag (own-stage): for each backward, the Applies on its (stage, replica) before it minus the version its
/// forward read: 0 without staleness, the stash depth under PipeDream, 1 under PipeDream-2BW after the first version.
struct PipelineMetrics {
  PipelineShape shape;
  double span_s = 0;
  std::vector<double> busy_s, idle_s, idle_fraction;
  std::vector<double> schedule_bubble_s, schedule_bubble_fraction;
  std::vector<double> warmup_s, optimizer_and_step_end_s, exposed_communication_s, imbalance_and_waiting_s;
  std::vector<double> inflight_microbatches_peak;  ///< forwards whose backward (a split one's W) has not run, in
                                                   ///< micro-batches
                                                   ///< (interleaved: chunk passes / v)
  std::vector<int> stashed_versions_peak;  ///< weight versions held at once: the current one of each replica and
                                           ///< every version an in-flight micro-batch read
  int steady_from_microbatch = 0;
  DelayStats delay;                                      ///< staleness, steady state (0 for synchronous schedules)
  std::vector<DelayStats> delay_per_stage;               ///< staleness, steady state
  std::map<std::int64_t, std::int64_t> delay_histogram;  ///< staleness, steady state: delay -> backward ops
  DelayStats delay_whole_run;                            ///< staleness
  DelayStats block_updates;                              ///< block updates between, steady state
  std::vector<DelayStats> block_updates_per_stage;       ///< steady state
  std::map<std::int64_t, std::int64_t> block_updates_histogram;  ///< steady state: count -> backward ops
  DelayStats block_updates_whole_run;
  DelayStats version_lag;  ///< whole run
  std::vector<DelayStats> version_lag_per_stage;
};

/// Measures an evaluated pipeline: the busy time of a stage is the time its ops run.
PipelineMetrics measure_pipeline(const PipelineSchedule& schedule, const PipelineTimeline& timeline);

/// Measures a pipeline from the records of one pipeline (all of an abstract one; one representative pipeline of a
/// simulation): the timeline comes from pipeline_timeline(), the busy time of a stage is the union of its
/// compute-stream records (recompute included). Throws std::invalid_argument as pipeline_timeline() does.
PipelineMetrics measure_pipeline(const PipelineSchedule& schedule, const SimulationRecord& record);

/// The mean over the stages of a per-stage list; 0 without stages.
double stage_mean(const std::vector<double>& per_stage);

/// The `pipeline` report section. Keys scripts rely on: idle_fraction, schedule_bubble_fraction, stashed_versions_peak,
/// inflight_microbatches_peak (lists per stage), idle_causes (lists per stage), staleness.max_delay,
/// staleness.mean_delay, staleness.per_stage (list of {"max", "mean"}), staleness.histogram (list of {"delay",
/// "count"}), and block_updates_between with the same keys (max, mean, per_stage, histogram of {"updates", "count"}).
Json pipeline_json(const PipelineMetrics& m);

}  // namespace placesim
