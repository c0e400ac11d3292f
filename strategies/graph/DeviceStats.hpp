#pragma once
#include <array>
#include <memory>
#include <vector>

#include "strategies/placement/Collective.hpp"
#include "strategies/graph/Record.hpp"

namespace placesim {

/// Busy intervals of one stream, merged as they arrive (a stream's tasks complete in order). Copies share the
/// intervals until one of them adds (copy on write): a folded step's thousands of devices that take their
/// representative's figures hold one list per representative.
class IntervalSet {
 public:
  void add(double start, double end);
  double total() const;
  const std::vector<std::pair<double, double>>& intervals() const { return spans_ ? *spans_ : kEmpty; }

 private:
  static inline const std::vector<std::pair<double, double>> kEmpty;
  std::shared_ptr<std::vector<std::pair<double, double>>> spans_;
};

/// Union of several interval sets (sorted, merged).
std::vector<std::pair<double, double>> interval_union(const std::vector<const IntervalSet*>& sets);
/// Length of `a` not covered by `b` (both sorted and merged).
double uncovered(const std::vector<std::pair<double, double>>& a, const std::vector<std::pair<double, double>>& b);

/// What one device did during the simulated step, accumulated while the simulation runs.
struct DeviceStats {
  std::array<double, kCommClasses> bytes_sent{};  ///< network bytes this device sent, per collective class
  double h2d_bytes = 0, d2h_bytes = 0;
  std::array<IntervalSet, kStreams> busy;  ///< per stream
  std::array<double, 4> current{};         ///< resident bytes per State
  std::array<double, 4> peak{};
  double buffers = 0, peak_buffers = 0;
  double peak_total = 0;  ///< max over time of all states plus buffers
  /// Each state (State order) and the buffers at the first moment the total reached peak_total: they sum to it.
  /// (The per-state peaks above are each state's own maximum, reached at different moments.)
  std::array<double, 5> at_peak{};
  double flops = 0;
  /// Compute time added by overlap interference: compute tasks' simulated time less their time alone.
  double interference_s = 0;
  double expert_compute_s = 0;  ///< mixture of experts: time of the routed experts' compute tasks

  void apply(State state, double delta, bool buffer);
  /// Communication time not hidden behind compute.
  double exposed_communication_s() const;
  /// Compute time during which this device's collectives or point-to-point transfers run (where overlap
  /// interference applies; host copies excluded).
  double overlapped_compute_s() const;
  double busy_s(Stream s) const { return busy[static_cast<std::size_t>(s)].total(); }
};

}  // namespace placesim
