#include "traces/chrome/TraceCounters.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace placesim {

std::vector<MemorySeries> memory_series(const SimulationRecord& record, const std::vector<int>& devices) {
  std::unordered_map<int, std::size_t> slot;
  std::vector<MemorySeries> series(devices.size());
  std::vector<std::vector<const MemoryEvent*>> events(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    slot[devices[i]] = i;
    series[i].device = devices[i];
  }
  for (const MemoryEvent& e : record.memory) {
    auto it = slot.find(e.device);
    if (it != slot.end()) events[it->second].push_back(&e);
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::stable_sort(events[i].begin(), events[i].end(), [](const MemoryEvent* a, const MemoryEvent* b) {
      return std::tie(a->time_s, a->order) < std::tie(b->time_s, b->order);
    });
    MemoryPoint now;
    for (const MemoryEvent* e : events[i]) {
      now.ns = to_ns(e->time_s);
      now.bytes[static_cast<std::size_t>(e->state)] += e->delta_bytes;
      series[i].points.push_back(now);
      series[i].peak_total = std::max(series[i].peak_total, now.total());
    }
  }
  return series;
}

std::vector<FlightPoint> in_flight_series(const SimulationRecord& record, const std::vector<Lane>& lanes,
                                          std::size_t first, std::size_t last) {
  std::vector<FlightPoint> changes;
  for (std::size_t l = first; l < last; ++l) {
    for (const Slice& s : lanes[l].slices) {
      if (!is_transfer(record.tasks[s.task].kind) || s.step_bytes <= 0) continue;
      changes.push_back({s.start_ns, s.step_bytes});
      changes.push_back({s.end_ns, -s.step_bytes});
    }
  }
  std::sort(changes.begin(), changes.end(), [](const FlightPoint& a, const FlightPoint& b) {
    return std::tie(a.ns, a.bytes) < std::tie(b.ns, b.bytes);
  });
  std::vector<FlightPoint> points;
  double now = 0;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    now += changes[i].bytes;
    bool instant_done = i + 1 == changes.size() || changes[i + 1].ns != changes[i].ns;
    // A step ending where the next equal step starts leaves the value unchanged: no point needed.
    if (instant_done && (points.empty() || points.back().bytes != now)) points.push_back({changes[i].ns, now});
  }
  return points;
}

}  // namespace placesim
