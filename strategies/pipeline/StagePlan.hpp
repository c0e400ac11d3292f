#pragma once
#include <cstdint>
#include <vector>

#include "strategies/placement/Experiment.hpp"
#include "strategies/pipeline/StageMemory.hpp"

namespace placesim {

/// Compute time of the pipeline's work, for stage_plan: one layer, and the embedding (first virtual stage) and the
/// output layer with its loss (last virtual stage), per micro-batch; backward includes any recompute.
struct StageWork {
  double layer_forward_s = 1, layer_backward_s = 2;
  double embedding_forward_s = 0, embedding_backward_s = 0;
  double head_forward_s = 0, head_backward_s = 0;
};

/// What the pipeline schedule implies for one stage, from its layer counts alone.
struct StagePlan {
  int stage = 0;
  std::vector<std::int64_t> chunk_layers;  ///< layers of each model chunk of the stage (virtual stage k*pp + stage)
  double inflight_passes = 0;    ///< peak chunk-forwards whose activations the stage holds (micro-batches x chunks)
  double activation_layers = 0;  ///< peak layers of activations held (activation_layer_equivalents)
  /// Idle share of one step when the schedule runs with each chunk taking its layers' time (plus the embedding or the
  /// head where they sit) and communication free: the bubble the schedule and the layer split imply. NaN when the
  /// step has more passes than the schedule evaluator accepts.
  double bubble_fraction = 0;
  double bubble_s = 0;  ///< that idle time, in the units of StageWork
};

/// One entry per pipeline stage of a resolved, valid experiment with layers.
std::vector<StagePlan> stage_plan(const Experiment& e, const StageWork& work);

}  // namespace placesim
