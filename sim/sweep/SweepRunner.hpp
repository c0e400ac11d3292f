#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sweep/Progress.hpp"
#include "strategies/sweep/SweepPoint.hpp"

namespace placesim {

/// How many points ended in each status.
struct SweepCounts {
  std::uint64_t ok = 0, invalid = 0, filtered = 0, error = 0;
  void add(PointStatus s);
  SweepCounts& operator+=(const SweepCounts& other);
  std::uint64_t total() const { return ok + invalid + filtered + error; }
};

struct SweepRunOptions {
  unsigned jobs = 1;               ///< worker threads (analyze) or concurrent simulator processes (simulate)
  double device_memory_bytes = 0;  ///< > 0: the capacity checked instead of the cluster's accelerator memory
  std::string simulator;           ///< simulate mode: the placesim executable run once per point
  Progress* progress = nullptr;    ///< advanced as points finish; may be null
  Shard shard;                     ///< the shard the rows say they belong to (SweepRows)
  /// Simulate mode: asked before each point is launched, in the order of `todo`; once it says true no further point
  /// is launched and those left write no row (a search stops at the first candidate its bound prunes).
  std::function<bool(std::uint64_t index)> stop_before;
};

/// Receives complete result lines as points finish (completion order); called under a lock, one call per batch.
using RowSink = std::function<void(std::string_view lines)>;

/// Evaluates the points `todo` of `spec` and hands their rows (SweepRows) to `sink`, filtered points included (so
/// that a complete results file has a row for every point). Analyze mode runs `jobs` threads over batches of points
/// (the analysis is pure); simulate mode checks each point analytically, then runs `simulator simulate - --report -` in
/// a child process with the point's experiment on stdin and reads the report from stdout (exit code 2 = invalid, with
/// the simulator's message).
/// Throws InputError unless `simulator` runs `simulate --help` and is this placesim's version (every row carries one).
void check_simulator(const std::string& simulator);

/// The reports `simulator` writes for `experiments` (`simulate - --report - --fidelity F`, each in its own
/// process), after check_simulator(). Throws InputError naming the experiment when one cannot be simulated.
std::vector<Json> simulated_reports(const std::string& simulator, Fidelity fidelity,
                                    const std::vector<Json>& experiments);

SweepCounts run_sweep(const SweepSpec& spec, const std::vector<std::uint64_t>& todo, const SweepRunOptions& options,
                      const RowSink& sink);

}  // namespace placesim
