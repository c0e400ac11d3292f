#include "sim/converge/UpdateDelays.hpp"

#include <algorithm>
#include <vector>

namespace placesim {

namespace {

// Where the Apply events of the trace sit, per replica and per block.
struct ApplyIndex {
  std::vector<std::vector<double>> times;       // [replica]: times of its Applies, trace order
  std::vector<std::vector<std::int64_t>> rank;  // [replica * stages + stage]: rank of each of the block's
                                                // Applies among the replica's
  std::vector<std::int64_t> next_apply_rank;    // [event]: rank of the next Apply on the event's block, -1
};

ApplyIndex index_applies(const UpdateLog& trace) {
  ApplyIndex x;
  const auto slots = static_cast<std::size_t>(trace.stages) * static_cast<std::size_t>(trace.replicas);
  x.times.resize(static_cast<std::size_t>(trace.replicas));
  x.rank.resize(slots);
  for (const TrainEvent& e : trace.events) {
    if (e.kind != TrainEvent::Kind::Apply) continue;
    auto& times = x.times[static_cast<std::size_t>(e.replica)];
    x.rank[static_cast<std::size_t>(e.replica * trace.stages + e.stage)].push_back(
        static_cast<std::int64_t>(times.size()));
    times.push_back(e.time_s);
  }
  x.next_apply_rank.assign(trace.events.size(), -1);
  std::vector<std::int64_t> upcoming(slots, -1);
  std::vector<std::size_t> seen(slots, 0);  // Applies of the block from the end, to read ranks backwards
  for (std::size_t k = trace.events.size(); k-- > 0;) {
    const TrainEvent& e = trace.events[k];
    if (e.kind == TrainEvent::Kind::Average) continue;
    const auto slot = static_cast<std::size_t>(e.replica * trace.stages + e.stage);
    x.next_apply_rank[k] = upcoming[slot];
    if (e.kind == TrainEvent::Kind::Apply) upcoming[slot] = x.rank[slot][x.rank[slot].size() - ++seen[slot]];
  }
  return x;
}

}  // namespace

UpdateDelays update_delays(const UpdateLog& trace, int steady_from_microbatch) {
  const ApplyIndex x = index_applies(trace);
  DelayTally steady, whole;
  UpdateDelays out;
  for (std::size_t k = 0; k < trace.events.size(); ++k) {
    const TrainEvent& e = trace.events[k];
    if (e.kind != TrainEvent::Kind::Backward || x.next_apply_rank[k] < 0) continue;
    const auto& times = x.times[static_cast<std::size_t>(e.replica)];
    const auto& block = x.rank[static_cast<std::size_t>(e.replica * trace.stages + e.stage)];
    const int version = e.versions_read[static_cast<std::size_t>(e.stage)];
    std::int64_t j = 0;
    if (version > 0) {
      const double made = times[static_cast<std::size_t>(block[static_cast<std::size_t>(version - 1)])];
      j = std::upper_bound(times.begin(), times.end(), made) - times.begin();
    }
    const std::int64_t delay = x.next_apply_rank[k] - j;
    whole.add(delay);
    if (e.microbatch < steady_from_microbatch) continue;
    steady.add(delay);
    ++out.histogram[delay];
  }
  out.steady = steady.stats();
  out.whole_run = whole.stats();
  return out;
}

}  // namespace placesim
