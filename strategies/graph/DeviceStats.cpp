#include "strategies/graph/DeviceStats.hpp"

#include <algorithm>
#include <initializer_list>

namespace placesim {

void IntervalSet::add(double start, double end) {
  if (end <= start) return;
  if (!spans_)
    spans_ = std::make_shared<std::vector<std::pair<double, double>>>();
  else if (spans_.use_count() > 1)
    spans_ = std::make_shared<std::vector<std::pair<double, double>>>(*spans_);
  auto& spans = *spans_;
  if (!spans.empty() && start <= spans.back().second) {
    spans.back().second = std::max(spans.back().second, end);
    return;
  }
  spans.emplace_back(start, end);
}

double IntervalSet::total() const {
  double sum = 0;
  for (const auto& [a, b] : intervals()) sum += b - a;
  return sum;
}

std::vector<std::pair<double, double>> interval_union(const std::vector<const IntervalSet*>& sets) {
  std::vector<std::pair<double, double>> all;
  for (const auto* s : sets) all.insert(all.end(), s->intervals().begin(), s->intervals().end());
  std::sort(all.begin(), all.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& span : all) {
    if (!out.empty() && span.first <= out.back().second)
      out.back().second = std::max(out.back().second, span.second);
    else
      out.push_back(span);
  }
  return out;
}

double uncovered(const std::vector<std::pair<double, double>>& a, const std::vector<std::pair<double, double>>& b) {
  double sum = 0;
  std::size_t j = 0;
  for (auto [start, end] : a) {
    double cursor = start;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < end; ++k) {
      if (b[k].first > cursor) sum += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
      if (cursor >= end) break;
    }
    if (cursor < end) sum += end - cursor;
  }
  return sum;
}

void DeviceStats::apply(State state, double delta, bool buffer) {
  if (buffer) {
    buffers += delta;
    peak_buffers = std::max(peak_buffers, buffers);
  } else {
    auto i = static_cast<std::size_t>(state);
    current[i] += delta;
    peak[i] = std::max(peak[i], current[i]);
  }
  double total = buffers;
  for (double c : current) total += c;
  if (total > peak_total) {
    peak_total = total;
    for (std::size_t i = 0; i < current.size(); ++i) at_peak[i] = current[i];
    at_peak[4] = buffers;
  }
}

namespace {

// The time any of `streams` is busy on a device, as disjoint intervals.
std::vector<std::pair<double, double>> busy_union(const DeviceStats& d, std::initializer_list<Stream> streams) {
  std::vector<const IntervalSet*> sets;
  for (Stream s : streams) sets.push_back(&d.busy[static_cast<std::size_t>(s)]);
  return interval_union(sets);
}

}  // namespace

double DeviceStats::exposed_communication_s() const {
  return uncovered(busy_union(*this, {Stream::TpComm, Stream::DpComm, Stream::DpGather, Stream::PpSend, Stream::H2D,
                                      Stream::D2H, Stream::CpComm, Stream::EpComm}),
                   busy_union(*this, {Stream::Compute}));
}

double DeviceStats::overlapped_compute_s() const {
  const auto compute = busy_union(*this, {Stream::Compute});
  double total = 0;
  for (const auto& [start, end] : compute) total += end - start;
  return total - uncovered(compute, busy_union(*this, {Stream::TpComm, Stream::DpComm, Stream::DpGather, Stream::PpSend,
                                                       Stream::CpComm, Stream::EpComm}));
}

}  // namespace placesim
