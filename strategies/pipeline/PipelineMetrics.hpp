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
/// Bubble: span = from the first start to the last end of any compute op or compute-stream record of the pipeline
/// (the whole run given); busy_s[s] = length of the union of stage s's ops or compute-stream records (forward,
/// backward, recompute, Apply, Average); idle_s[s] = span - busy_s[s]; bubble_fraction[s] = idle_s[s] / span. With
/// uniform stages and free transfers this is (p-1)/(m+p-1) for GPipe and 1F1B; idle_s / busy_s is the bubble relative
/// to the ideal time, (p-1)/(v m) for the interleaved schedule.
///
/// Staleness (Ilin & Richtarik, arXiv 2606.03498), per replica: a block update is an Apply op. Every backward op's
/// gradient is applied by the next Apply on its stage; k = the number of the replica's updates completed before that
/// Apply (completion order: end time, then stage, then position), j = the number of the replica's updates that ended
/// no later than the start of the forward of the same micro-batch and chunk on the same stage; the delay is k - j.
/// Under PipeDream, where an Apply follows every backward, k and j count backward ops, as DESIGN §5 states. Steady
/// state = micro-batches from total/2 on (the second half of the run).
///
/// Version lag (own-stage): for each backward, the Applies on its (stage, replica) before it minus the version its
/// forward read: 0 without staleness, the stash depth under PipeDream, 1 under PipeDream-2BW after the first version.
struct PipelineMetrics {
  PipelineShape shape;
  double span_s = 0;
  std::vector<double> busy_s, idle_s, bubble_fraction;
  std::vector<double> inflight_microbatches_peak;  ///< forwards whose backward has not run, in micro-batches
                                                   ///< (interleaved: chunk passes / v)
  std::vector<int> stashed_versions_peak;  ///< weight versions held at once: the current one of each replica and
                                           ///< every version an in-flight micro-batch read
  int steady_from_microbatch = 0;
  DelayStats delay;                                      ///< steady state
  std::vector<DelayStats> delay_per_stage;               ///< steady state
  std::map<std::int64_t, std::int64_t> delay_histogram;  ///< steady state: delay -> number of backward ops
  DelayStats delay_whole_run;
  DelayStats version_lag;  ///< whole run
  std::vector<DelayStats> version_lag_per_stage;
};

/// Measures an evaluated pipeline: the busy time of a stage is the time its ops run.
PipelineMetrics measure_pipeline(const PipelineSchedule& schedule, const PipelineTimeline& timeline);

/// Measures a pipeline from the records of one pipeline (all of an abstract one; one representative pipeline of a
/// simulation): the timeline comes from pipeline_timeline(), the busy time of a stage is the union of its
/// compute-stream records (recompute included). Throws std::invalid_argument as pipeline_timeline() does.
PipelineMetrics measure_pipeline(const PipelineSchedule& schedule, const SimulationRecord& record);

/// The bubble fraction averaged over the stages; 0 without stages.
double mean_bubble_fraction(const PipelineMetrics& m);

/// The `pipeline` report section. Keys scripts rely on: bubble_fraction, stashed_versions_peak,
/// inflight_microbatches_peak (lists per stage), staleness.max_delay, staleness.mean_delay, staleness.per_stage (list
/// of {"max", "mean"}), staleness.histogram (list of {"delay", "count"}).
Json pipeline_json(const PipelineMetrics& m);

}  // namespace placesim
