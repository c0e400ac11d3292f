#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/LayerTimes.hpp"
#include "strategies/graph/SimResult.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// What one simulated step comes to over all its devices. FLOP rates per GPU: model_tflops_per_gpu and mfu count
/// the model's FLOPs (forward + backward = 3x forward: the layers' matrix multiplies, the full s x s attention and the
/// logits, no recompute); hardware_tflops_per_gpu and hfu count what the devices execute (recompute included). mfu and
/// hfu divide by the accelerator's rated dense peak in training.dtype, also for FP8 runs and under a power limit
/// (README, Reports). Zero when the step took no time.
struct SimFigures {
  double step_time_s = 0, mfu = 0, hfu = 0, tokens_per_s = 0;
  double model_tflops_per_gpu = 0, hardware_tflops_per_gpu = 0;
  double exposed_communication_s = 0;  ///< the most communication any device waits for
  std::vector<double> idle_fraction;   ///< per stage: 1 - mean compute-busy time of its devices / step time (all
                                       ///< idle causes; was misnamed bubble_fraction)
  DeviceStats max;                     ///< bytes sent per class, offload bytes and peak memory: maxima over devices
  double bytes_sent = 0;               ///< the most bytes any device sent, all classes together
};

/// One analytic figure beside its simulated figure.
struct ValidationRow {
  std::string figure;  ///< report path, e.g. "communication.bytes_per_step"; "(analytic bound)" when not exact
  double analytic = 0, simulated = 0;
};

/// One simulated step: the resolved inputs, their analysis, the simulation and the figures derived from them.
struct SimulatedStep {
  Experiment experiment;  ///< resolved: device memory defaults to the cluster's accelerator
  ClusterSpec cluster;
  Analysis analysis;
  SimResult result;
  Fidelity fidelity = Fidelity::Flow;
  int layer_group = 1;  ///< layers per compute task
  std::vector<LayerPassTimes> layer_times;
  std::optional<PipelineMetrics> pipeline;  ///< with pp > 1: the pipeline at dp 0, tp 0
  SimFigures figures;
  std::vector<ValidationRow> validation;
  std::shared_ptr<const TaskGraph> graph;  ///< the expanded step, when SimulateSettings::keep_graph asked for it
  /// With stragglers (cluster.slow): the step time of the same experiment without them, simulated apart; nothing when
  /// it was not simulated.
  std::optional<double> step_without_slow_s;
};

SimFigures sim_figures(const Experiment& e, const ClusterSpec& c, const Analysis& a, const SimResult& r);

/// Each analytic figure beside its simulated maximum; the per-device byte comparison counts the devices whose
/// simulated bytes of any class differ from their stage's analytic bytes.
std::vector<ValidationRow> validation_rows(const Experiment& e, const Analysis& a, const SimResult& r,
                                           const SimFigures& f);

/// The simulate report: the analyze report plus cluster, simulation (SimFigures, fidelity, layer group and times,
/// per-device rows), validation and, with pp > 1, pipeline (README "Report contract").
Json simulation_report(const SimulatedStep& s);

/// A short human-readable summary of a simulated step.
std::string simulation_summary(const SimulatedStep& s);

}  // namespace placesim
