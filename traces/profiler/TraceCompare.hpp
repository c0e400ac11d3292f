#pragma once
#include <string>
#include <vector>

#include "traces/profiler/ProfilerTrace.hpp"
#include "traces/profiler/TraceSummary.hpp"

namespace placesim {

/// One term of a step, per step in the measured and the simulated trace.
struct CompareRow {
  std::string what;  ///< "backward gemm", "overlap", "idle: host stalls", "idle: launch gaps"
  double measured_s = 0, simulated_s = 0;
  double difference_s() const { return measured_s - simulated_s; }
};

/// Collectives of one operation, group size and size bucket in both traces.
struct CollectiveComparison {
  std::string op;
  int group_size = 0;
  double bytes = 0;
  double measured_bw_Bps = 0, simulated_bw_Bps = 0;
};

/// A measured trace against a simulated one. The rows decompose the step exactly: a step is its kernels' seconds
/// (by phase and class), less the seconds kernels ran at once ("overlap": their sum less the union), plus its idle
/// time (launch gaps and host stalls); so the rows' differences sum to the steps' difference.
struct TraceComparison {
  double measured_step_s = 0, simulated_step_s = 0;
  std::vector<CompareRow> rows;
  std::vector<CollectiveComparison> collectives;
  std::vector<std::string> findings;  ///< the differences in words, the largest first
};

TraceComparison compare_summaries(const TraceSummary& measured, const TraceSummary& simulated);
std::string comparison_text(const TraceComparison& c);
Json comparison_json(const TraceComparison& c);

/// The first summarised step of each trace's first rank, one above the other on one time scale, a row per stream,
/// kernels coloured by class.
std::string comparison_svg(const ProfilerTrace& measured, const TraceSummary& ms, const ProfilerTrace& simulated,
                           const TraceSummary& ss);

}  // namespace placesim
