#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "topology/hardware/CommProfile.hpp"
#include "traces/profiler/ProfilerTrace.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// Seconds per kernel class, indexed by KernelClass.
using ClassArray = std::array<double, kKernelClasses>;

/// One training step of one rank as its GPU ran it. The steps of a rank tile its GPU timeline: step i runs from the
/// later of its ProfilerStep span's start and the end of step i-1's last kernel, to the start of step i+1 (the last
/// step: to the later of its span's end and its last kernel's end).
struct StepSummary {
  int rank = 0;
  long number = 0;
  double start_s = 0, period_s = 0;
  double busy_s = 0;  ///< the union of the rank's GPU activities inside the step
  double idle_s = 0;  ///< period - busy: no kernel, copy or collective running
  /// Idle gaps between activities shorter than SummaryOptions::launch_gap_s (the launches' own cost), and the rest
  /// (the host held the GPU back: data loading, synchronisation, Python).
  double launch_gaps_s = 0, host_stalls_s = 0;
  /// From the step's start to its first compute kernel, unless that kernel started as a collective ended (it waited
  /// for the collective, which hid whatever the host did): the host's work before the step's compute (data loading,
  /// the Python of the step's start). And the GPU's idle time in that interval (collectives may run in it).
  double host_start_s = 0, idle_at_start_s = 0;
  ClassArray class_s{};  ///< kernel time launched by the step, by class (overlapping kernels each count)
  /// The part of class_s that ran at the same time as the other kind of work on the rank: compute kernels while a
  /// collective ran, collective kernels while a compute kernel ran (what overlap interference slows).
  ClassArray overlapped_s{};
  std::array<ClassArray, kPhases> phase_s{};  ///< the same by phase
  int kernels = 0;
};

/// Collectives of one operation and group size in one size bucket (powers of two of bytes).
struct CollectiveSummary {
  std::string op;
  int group_size = 0;
  double bytes = 0;  ///< the bucket's mean message
  int count = 0;
  double time_s = 0;        ///< summed kernel time
  double overlapped_s = 0;  ///< the part of time_s during which a compute kernel ran on the rank
  double bus_bw_Bps = 0;    ///< nccl-tests bus bandwidth of the bucket's median kernel
};

/// Overlap of compute kernels with collective kernels: the same kernel (name and shape) run alone and while a
/// collective runs on another stream.
struct OverlapSummary {
  int kernels_compared = 0;         ///< distinct kernels seen both ways
  double slowdown = 0;              ///< time-weighted geometric mean of median(overlapped) / median(alone); 0 if none
  double overlapped_compute_s = 0;  ///< compute-kernel time per step that overlapped a collective
};

/// GEMM kernels of one shape (where the trace recorded it), over the summarised steps.
struct GemmShapeSummary {
  double m = 0, n = 0, k = 0, batch = 1;
  int elem_bytes = 0;
  int count = 0;
  double median_s = 0, total_s = 0;  ///< per kernel; summed over every step
};

struct SummaryOptions {
  double launch_gap_s = 50e-6;  ///< idle gaps up to this long are counted as launch gaps
};

/// A trace reduced to what calibration and comparison read: the mean step over every step of every rank.
struct TraceSummary {
  std::vector<StepSummary> steps;
  int ranks = 0;
  std::string runtime;
  double period_s = 0, busy_s = 0, idle_s = 0, launch_gaps_s = 0, host_stalls_s = 0;  ///< means per step
  double host_start_s = 0, idle_at_start_s = 0;                                       ///< means per step
  ClassArray class_s{};                                                               ///< means per step
  ClassArray overlapped_s{};                                                          ///< means per step
  std::array<ClassArray, kPhases> phase_s{};
  std::vector<CollectiveSummary> collectives;  ///< per step: counts and times are means per step
  OverlapSummary overlap;
  int gemms_with_shape = 0;                   ///< GEMM kernels whose shape the trace recorded
  std::vector<GemmShapeSummary> gemm_shapes;  ///< by total time, the largest first
  std::vector<std::string> notes;
};

/// The collective a trace's op names ("allreduce", "allgather", "reduce_scatter", "broadcast"), as the NCCL model
/// costs it; nullopt for the others (all-to-all, send, recv, ...), which it costs as point-to-point.
std::optional<CollectiveKind> collective_kind(const std::string& op);

/// Summarises the steps of a trace (every step with kernels; a step that launched none is skipped).
TraceSummary summarize(const ProfilerTrace& t, const SummaryOptions& options = {});
Json summary_to_json(const TraceSummary& s);

}  // namespace placesim
