#pragma once
#include <cstdint>
#include <vector>

#include "strategies/pipeline/UpdateLog.hpp"

namespace placesim {

/// What the stale-SGD executor learns from an UpdateLog before running it.
struct UpdatePlan {
  std::int64_t applies = 0;  ///< Apply events in the trace
  /// At index replica * stages + stage: for each version v of that block (0 = initial), the index of the last
  /// event that reads it, or -1 when none does. A version can be released once that event has run.
  std::vector<std::vector<std::int64_t>> last_reader;
};

/// Checks that `trace` can be executed and computes its plan. Throws InputError naming trace.stages,
/// trace.replicas or trace.events[k].<field> and the value when:
/// - stages or replicas is below 1, or an event's stage or replica is outside them;
/// - time_s is not finite, negative, or earlier than the previous event's (events are in completion order);
/// - a Backward has a negative micro-batch, repeats the (replica, stage, micro-batch) of an earlier Backward (its
///   sample would be reused), or has versions_read of the wrong size or naming a version that its block of that
///   replica has not reached (or a negative one);
/// - an Apply has no gradient accumulated since the previous Apply of its block.
UpdatePlan plan_updates(const UpdateLog& trace);

}  // namespace placesim
