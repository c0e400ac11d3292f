#include "traces/chrome/TraceFlows.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace placesim {

namespace {

using StepKey = std::tuple<std::uint64_t, int, int>;  // (collective id, device, step)

/// Where each collective step is shown: a sorted vector, lighter than a map when fine traces hold millions.
class StepIndex {
 public:
  void add(StepKey key, SliceRef where) { entries_.emplace_back(key, where); }
  void sort() {
    std::sort(entries_.begin(), entries_.end(), [](auto& a, auto& b) { return a.first < b.first; });
  }
  const SliceRef* find(const StepKey& key) const {
    auto before = [](const auto& e, const StepKey& k) { return e.first < k; };
    auto it = std::lower_bound(entries_.begin(), entries_.end(), key, before);
    return it != entries_.end() && it->first == key ? &it->second : nullptr;
  }

 private:
  std::vector<std::pair<StepKey, SliceRef>> entries_;
};

const Slice& at(const TraceLayout& layout, SliceRef r) {
  return layout.lanes[r.lane].slices[r.slice];
}

}  // namespace

std::int64_t flow_time_ns(const Slice& s) {
  return s.start_ns + (s.end_ns - s.start_ns) / 2;
}

std::vector<FlowLink> link_flows(const SimulationRecord& record, const TraceLayout& layout, TraceDetail detail) {
  std::unordered_map<std::size_t, SliceRef> received;  // task → its receiving copy
  StepIndex steps;
  for (std::size_t l = 0; l < layout.lanes.size(); ++l) {
    const auto& slices = layout.lanes[l].slices;
    for (std::size_t i = 0; i < slices.size(); ++i) {
      const TaskRecord& t = record.tasks[slices[i].task];
      if (slices[i].received)
        received[slices[i].task] = {l, i};
      else if (detail == TraceDetail::Fine && t.kind == TaskKind::Collective && t.collective != 0)
        steps.add({t.collective, t.device, t.step}, {l, i});
    }
  }
  steps.sort();
  std::vector<FlowLink> links;
  auto link = [&](SliceRef from, SliceRef to, TaskKind kind) {
    if (flow_time_ns(at(layout, to)) >= flow_time_ns(at(layout, from)))
      links.push_back({links.size() + 1, from, to, kind});
  };
  for (std::size_t l = 0; l < layout.lanes.size(); ++l) {
    const auto& slices = layout.lanes[l].slices;
    for (std::size_t i = 0; i < slices.size(); ++i) {
      if (slices[i].received) continue;
      const TaskRecord& t = record.tasks[slices[i].task];
      if (t.kind == TaskKind::P2P) {
        auto r = received.find(slices[i].task);
        if (r != received.end()) link({l, i}, r->second, TaskKind::P2P);
      } else if (detail == TraceDetail::Fine && t.kind == TaskKind::Collective && t.collective != 0 && t.peer >= 0) {
        if (const SliceRef* next = steps.find({t.collective, t.peer, t.step + 1}))
          link({l, i}, *next, TaskKind::Collective);
      }
    }
  }
  return links;
}

}  // namespace placesim
