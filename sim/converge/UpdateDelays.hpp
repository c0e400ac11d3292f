#pragma once
#include <cstdint>
#include <map>

#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/UpdateLog.hpp"

namespace placesim {

/// The delays of the gradients the stale-SGD executor applies, computed from the UpdateLog alone.
struct UpdateDelays {
  DelayStats steady;                               ///< backwards of micro-batches >= steady_from_microbatch
  std::map<std::int64_t, std::int64_t> histogram;  ///< steady state: delay -> number of backward events
  DelayStats whole_run;
};

/// The delay of every Backward event whose gradient an Apply of the trace consumes (a trace cut at a time budget
/// may end before some are applied: those are left out), counted per replica in global block updates as in the
/// pipeline report (Ilin & Richtarik, arXiv 2606.03498): delay = k - j, where
/// - k = the replica's Apply events before the Apply that consumes the gradient (trace order);
/// - j = the replica's Apply events with time_s <= the time of the Apply that made the version of the backward's own
///   block the gradient was taken at (versions_read[stage]; 0 when that is the initial version).
/// The pipeline report counts j up to the start of the forward that read the block instead; the two agree whenever
/// that forward starts the moment the version's Apply ends, as in steady-state PipeDream with uniform stages and free
/// transfers (tests/test_converge.cpp checks it).
UpdateDelays update_delays(const UpdateLog& trace, int steady_from_microbatch);

}  // namespace placesim
