#include "traces/chrome/TraceLayout.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

namespace placesim {

namespace {

using Bucket = std::vector<Slice>;

std::vector<bool> selected_mask(const SimulationRecord& record, const TraceOptions& options) {
  std::vector<bool> mask(record.devices.size(), options.devices.empty());
  for (int d : options.devices) {
    if (d < 0 || static_cast<std::size_t>(d) >= mask.size())
      throw std::invalid_argument("trace selection names device " + std::to_string(d) + " of " +
                                  std::to_string(mask.size()));
    mask[static_cast<std::size_t>(d)] = true;
  }
  return mask;
}

bool selected(const std::vector<bool>& mask, int device) {
  if (device < 0 || static_cast<std::size_t>(device) >= mask.size())
    throw std::invalid_argument("record task names device " + std::to_string(device) + " of " +
                                std::to_string(mask.size()));
  return mask[static_cast<std::size_t>(device)];
}

Slice slice_of(const TaskRecord& t, std::size_t index, bool received) {
  Slice s;
  s.start_ns = to_ns(t.start_s);
  s.end_ns = std::max(s.start_ns, to_ns(t.end_s));
  s.task = s.last_task = index;
  s.bytes = s.step_bytes = t.bytes;
  s.received = received;
  return s;
}

/// Sorts tasks of one stream by time into buckets indexed by device * kStreams + stream.
std::vector<Bucket> fill_buckets(const SimulationRecord& record, const std::vector<bool>& mask) {
  std::vector<Bucket> buckets(mask.size() * kStreams);
  auto bucket = [&](int device, Stream s) -> Bucket& {
    return buckets[static_cast<std::size_t>(device) * kStreams + static_cast<std::size_t>(s)];
  };
  for (std::size_t i = 0; i < record.tasks.size(); ++i) {
    const TaskRecord& t = record.tasks[i];
    if (selected(mask, t.device)) bucket(t.device, t.stream).push_back(slice_of(t, i, false));
    if (t.kind == TaskKind::P2P && t.peer >= 0 && selected(mask, t.peer))
      bucket(t.peer, receive_stream(t.comm_class)).push_back(slice_of(t, i, true));
  }
  for (auto& b : buckets)
    std::sort(b.begin(), b.end(), [](const Slice& x, const Slice& y) {
      return std::tie(x.start_ns, x.end_ns, x.received, x.task) < std::tie(y.start_ns, y.end_ns, y.received, y.task);
    });
  return buckets;
}

/// Coarse detail: consecutive steps of one collective on one stream become one slice.
Bucket merge_collective_steps(const SimulationRecord& record, Bucket slices) {
  Bucket merged;
  for (const Slice& s : slices) {
    std::uint64_t id = record.tasks[s.task].collective;
    bool joins = !merged.empty() && id != 0 && !s.received && !merged.back().received &&
                 record.tasks[merged.back().task].collective == id;
    if (!joins) {
      merged.push_back(s);
      continue;
    }
    Slice& run = merged.back();
    run.end_ns = std::max(run.end_ns, s.end_ns);
    run.last_task = s.task;
    run.steps += 1;
    run.bytes += s.bytes;
    run.step_bytes = std::max(run.step_bytes, s.step_bytes);
  }
  return merged;
}

/// Puts each slice on the first lane where it fits, clamping sub-nanosecond overlaps away.
std::vector<Lane> assign_lanes(int device, Stream stream, const Bucket& slices) {
  std::vector<Lane> lanes;
  for (Slice s : slices) {
    auto fits = [&](const Lane& l) { return l.slices.back().end_ns <= s.start_ns + kClampTolerance_ns; };
    auto lane = std::find_if(lanes.begin(), lanes.end(), fits);
    if (lane == lanes.end()) {
      lanes.push_back(Lane{device, stream, static_cast<int>(lanes.size()), {}});
      lane = std::prev(lanes.end());
    } else {
      s.start_ns = std::max(s.start_ns, lane->slices.back().end_ns);
      s.end_ns = std::max(s.end_ns, s.start_ns);
    }
    lane->slices.push_back(s);
  }
  return lanes;
}

}  // namespace

std::int64_t to_ns(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 9.0e9)
    throw std::invalid_argument("trace time " + std::to_string(seconds) + " s is not a valid simulated time");
  return std::llround(seconds * 1e9);
}

std::vector<int> mesh_order(const SimulationRecord& record, const std::vector<int>& devices) {
  TraceOptions all_of_them{devices, TraceDetail::Coarse};
  auto mask = selected_mask(record, all_of_them);
  std::vector<int> order;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& x = record.devices[static_cast<std::size_t>(a)];
    const auto& y = record.devices[static_cast<std::size_t>(b)];
    return std::tie(x.pp, x.dp, x.cp, x.tp) < std::tie(y.pp, y.dp, y.cp, y.tp);
  });
  return order;
}

std::string slice_name(const SimulationRecord& record, const Slice& s) {
  const TaskRecord& t = record.tasks[s.task];
  std::string base = t.name.empty() ? to_string(t.kind) : t.name;
  if (s.received) return "recv " + base;
  if (s.steps == 1) return base;
  for (auto at = base.find(" step"); at != std::string::npos; at = base.find(" step", at + 1)) {
    if (at + 5 < base.size() && std::isdigit(static_cast<unsigned char>(base[at + 5]))) {
      base.resize(at);
      break;
    }
  }
  return base + " (" + std::to_string(s.steps) + " steps)";
}

bool is_transfer(TaskKind kind) {
  return kind == TaskKind::Collective || kind == TaskKind::P2P || kind == TaskKind::Offload;
}

TraceLayout layout_trace(const SimulationRecord& record, const TraceOptions& options) {
  auto mask = selected_mask(record, options);
  TraceLayout layout;
  layout.devices = mesh_order(record, options.devices);
  auto buckets = fill_buckets(record, mask);
  for (int device : layout.devices) {
    for (int s = 0; s < kStreams; ++s) {
      Bucket& b = buckets[static_cast<std::size_t>(device) * kStreams + static_cast<std::size_t>(s)];
      if (options.detail == TraceDetail::Coarse) b = merge_collective_steps(record, std::move(b));
      for (auto& lane : assign_lanes(device, static_cast<Stream>(s), b)) layout.lanes.push_back(std::move(lane));
      Bucket().swap(b);
    }
  }
  return layout;
}

}  // namespace placesim
