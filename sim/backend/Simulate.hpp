#pragma once
#include <string>
#include <vector>

#include "sim/backend/Simulator.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/report/SimReport.hpp"

namespace placesim {

/// An experiment ready to simulate: its cluster parsed once and checked against the mesh (device count), and the
/// device memory of the memory check defaulted to the accelerator's HBM unless one was given.
struct SimulationInput {
  Experiment experiment;
  ClusterSpec cluster;
};

/// Resolves the experiment's cluster. Throws InputError naming the fields (no cluster, a mesh that does not fit).
SimulationInput resolve_simulation(Experiment e);

struct SimulateSettings {
  ExpandOptions expand;
  SimOptions sim;                   ///< `record` is ignored: simulate_experiment() decides it from `traced_devices`
  std::vector<int> traced_devices;  ///< devices whose every task is recorded for a trace; ascending
  bool reproducible = false;        ///< zero the host-measured fields (wall time) so reports are byte-identical
  bool force = false;               ///< simulate even past the size limits (kMaxComputeTasks, kMaxSimSeconds, ...)
  bool trace = false;               ///< a trace of the traced devices will be written (its size is estimated)
  /// Fold the step's congruent data-parallel blocks into one (plan_folding) when it has them; false simulates every
  /// device (--symmetry off), for comparison.
  bool symmetry = true;
  bool keep_graph = false;  ///< keep the expanded step in SimulatedStep::graph (a profiler-trace export reads it)
};

/// After a folded simulation (SimOptions::folding, run in the folding's frame): every real device gets the figures of
/// its source (the simulated frame device standing for it), and the records of each device in `wanted` are its
/// source's, moved to it (device and peers shifted by the blocks between them). Records of simulated devices not in
/// `wanted` are dropped. No-op when not folded.
void unfold_result(SimResult& result, const Folding& folding, const std::vector<char>& wanted);

/// The most compute tasks (estimated_compute_tasks) simulate_experiment() expands without `force`: 20 million tasks
/// take minutes and gigabytes to expand and simulate.
constexpr double kMaxComputeTasks = 20e6;

/// What simulating an expanded step will cost, counted from the graph before anything runs. The rates are measured
/// (docs/benchmarks.md, "Simulation cost estimate"); the figures are orders of magnitude (within about 3x), made to
/// stop a run that would take hours or exhaust memory, not to predict it.
struct SimulationEstimate {
  double tasks = 0;         ///< tasks in the graph
  double flows = 0;         ///< SimGrid network activities: transfers and the ring steps of decomposed collectives
  double timers = 0;        ///< fixed-length tasks (compute, exact collectives)
  double seconds = 0;       ///< host time to simulate
  double memory_bytes = 0;  ///< peak resident memory of the process
  double trace_bytes = 0;   ///< size of an uncompressed Chrome trace of the recorded devices (0: no trace asked)
  // The longest fixed-length task and the largest transfer at the slowest bandwidth it may take: absurd inputs
  // (a unit mistake, a sequence of a billion tokens) show here first.
  double longest_compute_s = 0;
  std::string longest_compute;  ///< what that task is
  double longest_transfer_s = 0;
  std::string longest_transfer;
};
/// `stands_for` (a folded step): per simulated device, how many recorded devices its records are copied to (itself
/// included when recorded); the trace and the records grow by those copies. Empty: each recorded device once.
SimulationEstimate estimate_simulation(const TaskGraph& g, const ClusterSpec& c, const SimOptions& o, bool trace,
                                       const std::vector<int>& stands_for = {});

/// Host time beyond which simulate_experiment() refuses without `force` (20 minutes), and beyond which it warns.
constexpr double kMaxSimSeconds = 1200, kWarnSimSeconds = 60;
/// Process memory beyond which it refuses without `force` (16 GB), and beyond which it warns (2 GB).
constexpr double kMaxSimMemoryBytes = 16e9, kWarnSimMemoryBytes = 2e9;
/// Uncompressed trace size beyond which it refuses without `force` (4 GB), and beyond which it warns (500 MB).
constexpr double kMaxTraceBytes = 4e9, kWarnTraceBytes = 500e6;
/// Simulated length of one task beyond which the input is refused, `force` or not: a step of more than 11.6 days
/// per task is a unit mistake or an absurd shape, and SimGrid loses precision far from the step's scale.
constexpr double kMaxTaskSeconds = 1e6;

/// Refuses before anything is expanded a step too large to expand (kMaxComputeTasks) unless settings.force.
/// `share`: the share of the devices a folded step simulates (Folding::simulated_share).
void check_expandable(const Experiment& e, const SimulateSettings& settings, double share = 1);

/// The cluster a folded step simulates, in its frame (Folding::rotation): stragglers and degraded NICs and NVLinks
/// moved from their real devices to their frame devices. `c` itself when the frame is not rotated.
ClusterSpec frame_cluster(const ClusterSpec& c, const Folding& folding, std::int64_t job_devices);

/// Devices whose tasks the simulation records: the traced ones and the pipeline at dp 0, tp 0, which the
/// pipeline metrics, the layer times and derived pipelines read.
std::vector<char> recorded_devices(const Experiment& e, const std::vector<int>& traced);

/// Validates, analyses (once), expands and simulates one resolved experiment.
SimulatedStep simulate_experiment(const SimulationInput& in, const SimulateSettings& settings);

/// The records of the pipeline at dp 0, tp 0: what the pipeline metrics, the layer times and derived pipelines read.
SimulationRecord pipeline_records(const Experiment& e, const SimulationRecord& all);

/// Names and mesh coordinates of the experiment's devices on the cluster.
std::vector<DeviceInfo> device_infos(const Experiment& e, const ClusterSpec& c);

}  // namespace placesim
