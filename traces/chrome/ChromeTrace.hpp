#pragma once
#include <cstddef>
#include <string>

#include "strategies/graph/Record.hpp"
#include "traces/chrome/TraceOptions.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// Process id of a device in a placesim trace: the device index + 1 (viewers treat pid 0 as the idle process).
int trace_pid(int device);
/// Thread id of a stream of a device: stream index + 1, plus 10 per overflow lane (pp-recv #2 of pp-recv 5 is 15).
int trace_tid(Stream stream, int lane = 0);

/// What a written trace holds.
struct TraceSummary {
  std::size_t devices = 0;         ///< processes (selected devices)
  std::size_t threads = 0;         ///< threads with at least one slice: what speedscope counts as profiles
  std::size_t slices = 0;          ///< complete ("X") events
  std::size_t flows = 0;           ///< flow arrows (each one "s" and one "f" event)
  std::size_t counter_events = 0;  ///< "C" events (memory and bytes in flight)
};

/// Writes the Chrome trace event JSON of a simulation (DESIGN §6) to `path`: gzip when it ends in ".gz",
/// stdout for "-". The file is written event by event, never held whole in memory.
///
/// Layout: one process per selected device (named DeviceInfo::name(), sorted by mesh position pp, dp, tp), one
/// thread per stream with slices (sorted in Stream order); "X" events in µs with 3 decimals, named by the task's
/// name, category = TaskKind name, args = the task's fields that are set; a slice that ends exactly where the next
/// one on its thread starts is written 1 ns shorter, so that viewers adding ts + dur in floating point never see
/// the two overlap (the SVG and the counters keep the exact times); a P2P task shows on the sender's stream
/// and on the receiver's pp-recv, joined by a flow ("s"/"f", category "p2p"); in fine detail each collective step
/// flows to the receiver's next step (category "collective"). Counters per device: "memory" (resident bytes per
/// state) and "bytes in flight". `other_data` (an object, or null) is copied into "otherData" with placesim's
/// fields added. Same input → byte-identical output.
/// Throws InputError when `path` cannot be written, std::invalid_argument for an inconsistent record.
TraceSummary write_chrome_trace(const std::string& path, const SimulationRecord& record, const Json& other_data,
                                const TraceOptions& options);

}  // namespace placesim
