#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "strategies/graph/Record.hpp"
#include "traces/chrome/TraceLayout.hpp"

namespace placesim {

inline constexpr int kStates = 4;  ///< parameters, gradients, optimizer, activations (State's order)

/// Resident bytes per state on one device after one MemoryEvent.
struct MemoryPoint {
  std::int64_t ns = 0;
  std::array<double, kStates> bytes{};
  double total() const { return bytes[0] + bytes[1] + bytes[2] + bytes[3]; }
};

/// A device's memory over time: one point per MemoryEvent, cumulated in (time, order) order. Events at the same
/// time each get their point, so a transient allocation freed at the same instant still shows in the peak.
struct MemorySeries {
  int device = 0;
  std::vector<MemoryPoint> points;
  double peak_total = 0;  ///< max over points of the total, 0 when there are none
};

/// The memory series of each device in `devices` (same order), from one pass over record.memory.
std::vector<MemorySeries> memory_series(const SimulationRecord& record, const std::vector<int>& devices);

/// Bytes in flight on one device at a time.
struct FlightPoint {
  std::int64_t ns = 0;
  double bytes = 0;
};

/// Bytes in flight on the device of the lanes in [first, last): the payload of every transfer slice shown on the
/// device (collective steps it sends, P2P sends and receives, offloads) while it runs. A merged collective
/// (coarse detail) counts its largest step. One point per instant at which the value changes (changes at one
/// instant are summed first, so back-to-back steps neither add up nor produce a point).
std::vector<FlightPoint> in_flight_series(const SimulationRecord& record, const std::vector<Lane>& lanes,
                                          std::size_t first, std::size_t last);

}  // namespace placesim
