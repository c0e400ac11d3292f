#pragma once
#include <string>
#include <vector>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/report/SimReport.hpp"

namespace placesim {

/// The limits beyond which a figure is more likely a mistake in the input than a result: a real
/// training step runs at 5 % to 75 % MFU, on links of at least 1 GB/s, in under an hour.
struct WarningLimits {
  double mfu_min = 0.05;
  double mfu_max = 0.75;
  double link_bw_min_Bps = 1e9;
  double step_time_max_s = 3600;
};

/// Warnings about an analysis: the memory a device needs over its device memory (when one is set) and, with a
/// cluster, every link (nvlink_bw, pcie_bw, nic_bw) below the minimum bandwidth. Each names the field and value.
std::vector<std::string> analysis_warnings(const Experiment& e, const Analysis& a, const ClusterSpec* cluster,
                                           const WarningLimits& limits = {});

/// The analysis warnings of a simulated step, then: MFU outside [mfu_min, mfu_max], step time over the maximum,
/// simulated peak memory over the device memory.
std::vector<std::string> simulation_warnings(const SimulatedStep& s, const WarningLimits& limits = {});

/// Each warning on a line of its own, "warning: ..."; empty when there are none.
std::string warning_lines(const std::vector<std::string>& warnings);

}  // namespace placesim
