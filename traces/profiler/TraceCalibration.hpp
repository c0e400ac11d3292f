#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/profiler/TraceSummary.hpp"

namespace placesim {

/// One figure a trace calibration set: the profile or training field, its value before (the model's) and after,
/// and what in the trace decided it.
struct CalibratedFigure {
  std::string
      field;  ///< "compute.gemm_peak_efficiency", "comm.intra_node.bus_efficiency", "training.host_time_per_step"
  double model = 0, fitted = 0;
  std::string evidence;  ///< "GEMM kernels 412.0 ms per step, the model 350.2 ms at the profile's efficiency"
};

/// A calibration from a profiler trace: the profile file (accelerator, compute, comm, sources, fit) with a
/// "training" section, as simulate reads it through an experiment's "calibration" key.
struct TraceCalibration {
  std::vector<CalibratedFigure> figures;
  /// The trace's GEMM shapes (where it recorded them), the largest total first: achieved TFLOP/s of the median
  /// kernel against the fitted profile's GEMM model at that shape.
  struct Gemm {
    std::string shape;  ///< "4096x12288x4096 bf16" (m x n x k, batch when above 1)
    int count = 0;
    double achieved_tflops = 0, model_tflops = 0;
  };
  std::vector<Gemm> gemms;
  std::vector<std::string> warnings;  ///< fits that look wrong (an efficiency above 1, a class the model lacks)
  Json file;
};

/// Fits the figures a one-node trace measures, against experiment `e` (what the trace ran) on cluster `c`: for the
/// kernel classes, the profile's gemm_peak_efficiency, flash_attention_efficiency and memory_efficiency such that
/// the device's modelled GEMM, attention and memory-bound (with the optimizer step) seconds per step equal the
/// trace's (a fixed point over the three, each class's model rescaled by TaskClassifier; a class the trace or the
/// model lacks keeps the profile's value); for NCCL, one factor on the intra-node fabric's bus efficiencies (every
/// protocol's) such that the trace's collectives of known size, modelled by collective_time_s, take their measured
/// time; the host time per step as the trace's idle GPU time per step less the model's launch floors; and, when
/// the trace shows the same kernels (name and shape) alone and beside a collective, the intra-node compute
/// slowdown. `sources` names the trace files.
TraceCalibration calibrate_from_trace(const TraceSummary& measured, const Experiment& e, const ClusterSpec& c,
                                      const std::vector<std::string>& sources);
/// The figures as a text table: field, model, fitted, change, evidence; then the warnings.
std::string calibration_table(const TraceCalibration& t);

}  // namespace placesim
