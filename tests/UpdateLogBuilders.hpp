#pragma once
// Hand-built UpdateLogs for the stale-SGD tests and benchmark, standing in for the pipeline schedule module.
#include <algorithm>
#include <vector>

#include "strategies/pipeline/UpdateLog.hpp"

namespace placesim::test {

inline TrainEvent backward(int stage, int microbatch, std::vector<int> versions, double time_s, int replica = 0) {
  return TrainEvent{TrainEvent::Kind::Backward, stage, replica, microbatch, time_s, std::move(versions)};
}

inline TrainEvent apply(int stage, double time_s, int replica = 0) {
  return TrainEvent{TrainEvent::Kind::Apply, stage, replica, -1, time_s, {}};
}

inline TrainEvent average(int stage, double time_s) {
  return TrainEvent{TrainEvent::Kind::Average, stage, 0, -1, time_s, {}};
}

/// Mini-batch SGD through a pipeline without staleness, GPipe-like: in step n the backwards of micro-batches
/// n*m .. n*m+m-1 (stages S-1 down to 0 for each) all read version n of every block, then every stage applies
/// once. One time unit per event.
inline UpdateLog synchronous_log(int stages, int microbatches, int steps) {
  UpdateLog trace{stages, 1, {}};
  double t = 0;
  for (int n = 0; n < steps; ++n) {
    for (int j = 0; j < microbatches; ++j)
      for (int s = stages - 1; s >= 0; --s)
        trace.events.push_back(backward(s, n * microbatches + j, std::vector<int>(stages, n), t += 1));
    for (int s = stages - 1; s >= 0; --s) trace.events.push_back(apply(s, t += 1));
  }
  return trace;
}

/// PipeDream-like asynchronous updates with weight stashing: every backward is followed by an Apply of its block,
/// and the forwards of micro-batch i read block t at version max(0, i - (S - 1 - t)): the first stage lags by
/// S - 1 of its own updates, the last by none (the in-flight counts of 1F1B in steady state).
inline UpdateLog pipedream_like_log(int stages, int microbatches, double seconds_per_event = 1e-3) {
  UpdateLog trace{stages, 1, {}};
  double t = 0;
  for (int i = 0; i < microbatches; ++i) {
    std::vector<int> versions(stages);
    for (int s = 0; s < stages; ++s) versions[s] = std::max(0, i - (stages - 1 - s));
    for (int s = stages - 1; s >= 0; --s) {
      trace.events.push_back(backward(s, i, versions, t += seconds_per_event));
      trace.events.push_back(apply(s, t += seconds_per_event));
    }
  }
  return trace;
}

}  // namespace placesim::test
