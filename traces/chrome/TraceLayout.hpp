#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/graph/Record.hpp"
#include "traces/chrome/TraceOptions.hpp"

namespace placesim {

/// One bar of a timeline: a task, a run of merged collective steps (coarse detail), or the receiving side of a
/// point-to-point transfer. Times are whole nanoseconds so that writers format them exactly.
struct Slice {
  std::int64_t start_ns = 0, end_ns = 0;
  std::size_t task = 0;       ///< index in SimulationRecord::tasks of the (first) task
  std::size_t last_task = 0;  ///< index of the last merged step; == task when nothing was merged
  int steps = 1;              ///< collective steps merged into this slice
  double bytes = 0;           ///< payload: the task's, or the sum over the merged steps
  double step_bytes = 0;      ///< largest single-step payload: what is in flight at once while the slice runs
  bool received = false;      ///< the receiving copy of a P2P task, shown on the peer's pp-recv stream
};

/// The slices of one stream of one device, in time order and never overlapping. A stream whose tasks overlap
/// (which the simulator never records, but receives from two senders can) spills onto extra lanes.
struct Lane {
  int device = 0;
  Stream stream = Stream::Compute;
  int index = 0;  ///< 0 for the stream itself, k for its k-th overflow lane
  std::vector<Slice> slices;
};

/// What a timeline shows: the selected devices in mesh order and their non-empty lanes.
struct TraceLayout {
  std::vector<int> devices;  ///< selected devices ordered by mesh position (pp, dp, tp, then index)
  std::vector<Lane> lanes;   ///< ordered by device (as in `devices`), stream, lane index; none is empty
};

/// Overlaps up to this much between consecutive slices of a stream are floating-point noise: the later slice is
/// clamped to start where the earlier one ends instead of spilling onto a new lane.
inline constexpr std::int64_t kClampTolerance_ns = 1;

/// Seconds to whole nanoseconds (rounded to nearest; monotone, so ordered times stay ordered).
std::int64_t to_ns(double seconds);

/// Builds the lanes of the selected devices: tasks on their own streams, P2P receives on the peer's pp-recv
/// stream (when the peer is selected), collective steps merged per collective in coarse detail.
/// Throws std::invalid_argument for a task or selection naming a device the record does not have, or a
/// non-finite or negative time.
TraceLayout layout_trace(const SimulationRecord& record, const TraceOptions& options);

/// The devices of a selection (empty = all) ordered by mesh position: pp, then dp, then tp, then index.
std::vector<int> mesh_order(const SimulationRecord& record, const std::vector<int>& devices);

/// The name a viewer shows for a slice: the record's task name (its kind when unnamed); "recv " before it for a
/// receiving copy; merged steps lose the step token and say how many they are ("allreduce tp grp@gpu8 step2 1 MB" →
/// "allreduce tp grp@gpu8 (14 steps)"), since the byte total goes with the slice, not the name.
std::string slice_name(const SimulationRecord& record, const Slice& s);

/// True for the kinds whose tasks move bytes (collective steps, P2P transfers, offloads).
bool is_transfer(TaskKind kind);

}  // namespace placesim
