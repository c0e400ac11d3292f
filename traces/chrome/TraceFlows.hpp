#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strategies/graph/Record.hpp"
#include "traces/chrome/TraceLayout.hpp"

namespace placesim {

/// A slice of a layout: lane index into TraceLayout::lanes and slice index in that lane.
struct SliceRef {
  std::size_t lane = 0, slice = 0;
};

/// An arrow between two slices: data sent by `from` is consumed by `to`.
struct FlowLink {
  std::uint64_t id = 0;  ///< 1, 2, ... in layout order of `from`
  SliceRef from, to;
  TaskKind kind = TaskKind::P2P;  ///< P2P or Collective: the category of the flow
};

/// Where a flow's ends sit in time: the middle of their slices, so that viewers bind each end to its slice
/// unambiguously.
std::int64_t flow_time_ns(const Slice& s);

/// Links every P2P send to its receive when both devices are shown, and, in fine detail, every collective step
/// to the step of the same collective that follows it on the receiver (step + 1 on `peer`). A link whose finish
/// would lie before its start is left out: it would claim a causality the times contradict.
std::vector<FlowLink> link_flows(const SimulationRecord& record, const TraceLayout& layout, TraceDetail detail);

}  // namespace placesim
