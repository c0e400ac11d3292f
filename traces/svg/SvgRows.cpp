#include "traces/svg/SvgRows.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "traces/chrome/TraceLayout.hpp"

namespace placesim {

namespace {

/// "1-7", "1, 3, 5-6": ascending values with runs collapsed.
std::string ranges(const std::set<std::int64_t>& values) {
  std::string out;
  for (auto it = values.begin(); it != values.end();) {
    std::int64_t first = *it, last = *it;
    for (++it; it != values.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ", ";
    out += std::to_string(first);
    if (last > first) out += (last == first + 1 ? ", " : "-") + std::to_string(last);
  }
  return out;
}

std::string tp_note(const std::set<std::int64_t>& hidden, const std::set<std::int64_t>& drawn, std::size_t count) {
  // "of each stage" only when every drawn row is one tp rank (a partial selection may draw tp 1 of one stage and
  // tp 0 of another).
  if (drawn.size() == 1)
    return (hidden.size() == 1 ? "tp rank " : "tp ranks ") + ranges(hidden) +
           " of each stage not drawn (same schedule as tp" + std::to_string(*drawn.begin()) + ")";
  return std::to_string(count) + (count == 1 ? " device" : " devices") +
         " not drawn: a higher tp rank of a drawn device's stage (same schedule)";
}

}  // namespace

SvgRows svg_rows(const SimulationRecord& record, const std::vector<int>& selection, bool all_tp_ranks, int max_rows) {
  SvgRows rows;
  std::set<std::int64_t> hidden, drawn;
  auto group = [&](int d) {
    const DeviceInfo& info = record.devices[static_cast<std::size_t>(d)];
    return std::tie(info.pp, info.dp, info.cp);
  };
  // Mesh order puts a group's devices next to each other, lowest tp first.
  for (int d : mesh_order(record, selection)) {
    if (!all_tp_ranks && !rows.devices.empty() && group(rows.devices.back()) == group(d)) {
      hidden.insert(record.devices[static_cast<std::size_t>(d)].tp);
      ++rows.tp_hidden;
      continue;
    }
    rows.devices.push_back(d);
  }
  if (rows.tp_hidden > 0) {
    for (int d : rows.devices) drawn.insert(record.devices[static_cast<std::size_t>(d)].tp);
    rows.tp_note = tp_note(hidden, drawn, rows.tp_hidden);
  }
  const std::size_t kept = std::min(rows.devices.size(), static_cast<std::size_t>(std::max(max_rows, 1)));
  rows.omitted = rows.devices.size() - kept;
  rows.devices.resize(kept);
  return rows;
}

}  // namespace placesim
